"""Documented shapes (with units) of answers built as plain dicts: the deadline quote and
booking (paper 003) and the bid preview (paper 000, Sec. 5). Used only for the schema
(``extend_schema(responses=...)``); the fuzz test checks the answers against them."""

from __future__ import annotations

from rest_framework import serializers

from marketplace.api.fields import money_help

SIM_S = "simulated seconds"


def _money(text: str, *, null: bool = False) -> serializers.CharField:
    return serializers.CharField(allow_null=null, help_text=money_help(text + (" Null when infinite." if null else "")))


def _seconds(text: str, *, null: bool = False) -> serializers.FloatField:
    return serializers.FloatField(allow_null=null, help_text=f"{text}, {SIM_S}." + (" Null when infinite." if null else ""))


class DeadlineResourceOut(serializers.Serializer):
    resource_type = serializers.CharField(help_text="Resource type name.")
    tasks = serializers.IntegerField(help_text="Tasks of this type, a count.")
    work = serializers.FloatField(help_text="Work: tasks x seconds per task, slot-seconds.")
    unit_price = serializers.FloatField(help_text="Price b_k per slot-second (money per slot-second), a rate (paper 003, Sec. 3).")
    available = serializers.IntegerField(help_text="Slots available to the booking at its start (after start_delay), a count.")
    capacity = serializers.IntegerField(help_text="Slots of the type, a count.")
    busy_now = serializers.IntegerField(help_text="Slots running a task now (the cluster's load as of the last tick), a count.")
    promised = serializers.IntegerField(help_text="Slots promised to reservations and bookings in the window, a count.")
    slots = serializers.IntegerField(help_text="Whole slots booked, a count.")
    continuous = serializers.FloatField(help_text="Slots of the continuous (fractional) optimum.")


class DeadlineCurveOut(serializers.Serializer):
    relative_deadline = serializers.FloatField(help_text=f"Deadline from now, {SIM_S}.")
    payment = _money("Payment for that deadline.", null=True)
    continuous_payment = _money("Payment of the continuous optimum.", null=True)


class DeadlineQuoteOut(serializers.Serializer):
    """The cheapest whole-slot booking that meets the deadline (paper 003, Definition 2)."""

    feasible = serializers.BooleanField(help_text="Whether the deadline can be met.")
    start = _seconds("Start on the market clock")
    deadline = _seconds("Deadline on the market clock")
    relative_deadline = _seconds("Deadline from the start")
    planned_deadline = _seconds("Deadline planned for (shortened by the estimate's error range)")
    alpha_err = serializers.FloatField(help_text="Lowest estimate / real work ratio, dimensionless.")
    beta_err = serializers.FloatField(help_text="Highest estimate / real work ratio, dimensionless.")
    node = serializers.CharField(help_text="The market (node) that prices the booking.")
    price_source = serializers.CharField(help_text="Where the unit prices come from.")
    resources = DeadlineResourceOut(many=True, help_text="Per resource type.")
    exec_time = _seconds("Execution time of the booking", null=True)
    payment = _money("What the booking costs (null when infeasible).", null=True)
    continuous_exec_time = _seconds("Execution time of the continuous optimum", null=True)
    continuous_payment = _money("Payment of the continuous optimum.", null=True)
    rounding_cost = _money("Extra cost of whole slots over the continuous optimum.", null=True)
    rounded_up_payment = _money("Payment when every slot count is rounded up.", null=True)
    nominal_payment = _money("Payment without the deadline's pressure.", null=True)
    extra_cost = _money("Payment above the nominal one.", null=True)
    guarantee = serializers.ListField(child=serializers.FloatField(allow_null=True),
                                      help_text=f"Guaranteed finish range [lo, hi], {SIM_S} (null: infinite).")
    paper_guarantee = serializers.ListField(child=serializers.FloatField(allow_null=True),
                                            help_text=f"The paper's bound [lo, hi], {SIM_S} (null: infinite).")
    fastest_time = _seconds("Fastest possible finish from now (waiting for slots to free included)", null=True)
    start_delay = _seconds("Wait until the booked slots are free (running tasks end first; freed slots go to bookings "
                           "before the auction)")
    reason = serializers.CharField(help_text="Why no booking meets the deadline (empty when one does).")
    starts_at = _seconds("When the booked slots are free, on the market clock (start + start_delay); pass it as the "
                         "booking's quoted_start", null=True)
    finishes_by = _seconds("The latest guaranteed finish, on the market clock (start + guarantee[1]); pass it as the "
                           "booking's quoted_finish", null=True)
    paid_rate = serializers.FloatField(allow_null=True, help_text=(
        "What the booking pays per slot-second of its work: payment / sum of the work, money per slot-second, a rate "
        "(paper 003 charges (T/R) sum_k b_k r_k: it differs from the unit prices). Null when infeasible."))
    curve = DeadlineCurveOut(many=True, help_text="Payment against relative deadline.")


class DeadlineBookOut(DeadlineQuoteOut):
    job = serializers.IntegerField(help_text="The job booked.")
    quoted_start = _seconds("The start the accepted quote gave (its starts_at), on the market clock")
    booked_start = _seconds("When the booking's slots are free, on the market clock")
    start_moved = serializers.FloatField(help_text=(
        f"booked_start - max(quoted_start, booking time), {SIM_S}: negative when the slots free sooner than quoted, "
        "0 when the start kept its promise (a later start is refused with 409)."))
    notice = serializers.CharField(help_text="What moved since the quote, in words (empty when nothing did).")


class DeadlineChangedOut(serializers.Serializer):
    """409: the booking's quote is worse than the one accepted; review the new quote and book again."""

    detail = serializers.CharField(help_text="What got worse: the price, the start or the guaranteed finish.")
    quote = DeadlineQuoteOut(help_text="The new quote (book again with its payment, starts_at and finishes_by).")


PAID_RATE_AUCTION = ("What the job pays per slot-second of its work at this budget: budget / work, money per slot-second, "
                     "a rate (an auction job pays its budget at completion, paper 000; compare price_level). Null without work.")


class PreviewRowOut(serializers.Serializer):
    budget = _money("The budget tried.")
    shares = serializers.DictField(child=serializers.FloatField(), help_text="Share per resource type name, 0 to 1.")
    sub_budgets = serializers.DictField(child=serializers.CharField(), help_text=money_help("Sub-budget per resource type name."))
    finish_s = serializers.FloatField(allow_null=True, help_text=f"Estimated finish from now, {SIM_S} (null: never).")
    converged = serializers.BooleanField(help_text="Whether the auction converged.")
    in_pool = serializers.BooleanField(allow_null=True, help_text="SLO bids: in the prolific pool (null without an SLO).")
    paid_rate = serializers.FloatField(allow_null=True, help_text=PAID_RATE_AUCTION)
    refused = serializers.BooleanField(help_text="True when a bid of this budget would be refused: below suggested.minimum, "
                                                 "what the reserve prices ask for the work (only the entered budget can be).")


class SuggestedBudgetOut(serializers.Serializer):
    budget = _money("The budget that pays the market's price level for the bid's work.")
    finish_s = serializers.FloatField(allow_null=True, help_text=f"Estimated finish from now at that budget, {SIM_S} (null: never).")
    price_level = serializers.FloatField(help_text=(
        "The market's price level, money per slot-second (one vote per tenant that bought in contention and one for the "
        "reference rate, the median; never below the reserve prices)."))
    work = serializers.FloatField(help_text="The bid's work: tasks x seconds per task, summed, slot-seconds.")
    minimum = _money("The least budget the reserve prices allow for this work (reserve x slot-seconds per type); "
                     "a bid below it is refused.")
    paid_rate = serializers.FloatField(allow_null=True, help_text=PAID_RATE_AUCTION)


class PreviewOut(serializers.Serializer):
    """A dry run of a bid: an estimate, nothing placed or held."""

    estimate = serializers.BooleanField(help_text="Always true: this is an estimate.")
    note = serializers.CharField(help_text="What the estimate assumes.")
    budget = _money("The budget entered.")
    shares = serializers.DictField(child=serializers.FloatField(), help_text="Share per resource type name at the budget, 0 to 1.")
    finish_s = serializers.FloatField(allow_null=True, help_text=f"Estimated finish from now, {SIM_S} (null: never).")
    in_pool = serializers.BooleanField(allow_null=True, help_text="SLO bids: in the prolific pool (null without an SLO).")
    converged = serializers.BooleanField(help_text="Whether the auction converged.")
    paid_rate = serializers.FloatField(allow_null=True, help_text=PAID_RATE_AUCTION)
    refused = serializers.BooleanField(help_text="True when a bid of this budget would be refused (below suggested.minimum): "
                                                 "the estimate is what it would buy if the reserve prices allowed it.")
    work = serializers.FloatField(help_text="The bid's work: tasks x seconds per task, summed, slot-seconds.")
    curve = PreviewRowOut(many=True, help_text="The same at 1/8 .. 8 times the budget and at the suggested one.")
    suggested = SuggestedBudgetOut(allow_null=True, help_text="A suggested budget: about this much finishes in about this long.")
