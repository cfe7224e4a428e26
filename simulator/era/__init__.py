"""ERA (paper 001) in the simulator: request streams and one mechanism over a stream."""
