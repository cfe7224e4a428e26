"""ERA (paper 001) experiments: the Sec. 4 headline with the day/night case (``headline``), the Azure Batch
comparison of Fig. 3 (``fig3``) and the Rayon integration check (``rayon``)."""
