"""The simulation lab's study form: workload, cluster, configuration and sweep, with field-level errors."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings

from marketplace.lab.services.uploads import limit_text
from scheduler.registry import dispatch_choices, fairshare_choices, mechanism_choices
from simulator import experiments
from simulator.experiments.ltrf.traces import SEARCH
from simulator.whatif.run import FB2009, PREDICTORS
from simulator.workloads.synthetic import GENERATOR_DEFAULTS, GENERATORS

GENERATOR_LABELS = {
    "abacus_table1": "Abacus Table 1: 3 users, Poisson arrivals (paper 000, Sec. 7.1.2)",
    "era_classes": "ERA's 6 job classes, $1 / $10 per unit (paper 001, Sec. 4; 1 resource type)",
    "cura_mix": "Cura's small / medium / large mix (paper 004, Sec. IV-A)",
}

# The shared SWF traces: checked out beside the repository (../shared/traces), as the
# simulator's trace search (simulator.experiments.ltrf.traces.SEARCH) finds them.
SHARED_TRACES = next((d for d in SEARCH[1:] if d.is_dir()), SEARCH[1])


def trace_choices() -> list[tuple[str, str]]:
    """Repository traces (FB-2009 and the shared SWF logs present on this machine), then an upload."""
    out = [("fb2009", "FB-2009 (SWIM, 24 h, map + reduce)")]
    if SHARED_TRACES.is_dir():
        out += [(f"shared:{p.name}", f"{p.name} (SWF, processors)") for p in sorted(SHARED_TRACES.glob("*.swf.gz"))]
    return [*out, ("upload", "Upload a SWIM .tsv or SWF .swf(.gz) file")]


def _floats(text: str, field: str) -> list[float]:
    """Comma-separated finite numbers (``inf`` and ``nan`` parse as floats and then broke ``int()``: a 500)."""
    try:
        values = [float(x) for x in text.replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise forms.ValidationError(f"{field}: enter numbers separated by commas, like 0.2, 0.5, 0.8") from None
    if not all(math.isfinite(v) and abs(v) < 2**53 for v in values):
        raise forms.ValidationError(f"{field}: enter finite numbers (no inf or nan), like 0.2, 0.5, 0.8")
    return values

OPTIONAL_DEFAULTS = {**GENERATOR_DEFAULTS, "predictor": "exact"}  # the generators' one table of defaults


class StudyForm(forms.Form):
    title = forms.CharField(max_length=200, initial="sharing inside the queues on FB-2009, busy hours 14-16")
    trace = forms.ChoiceField(choices=trace_choices)
    upload = forms.FileField(required=False, help_text="SWIM TSV (6 tab-separated fields) or SWF (18 fields), plain or .gz")
    trace_format = forms.ChoiceField(choices=[("auto", "by file name"), ("swim", "SWIM TSV"), ("swf", "SWF")], initial="auto")
    start_hour = forms.FloatField(min_value=0, initial=14.0, help_text="hours into the trace")
    hours = forms.FloatField(min_value=0.01, initial=2.0, help_text="length of the slice (trace hours)")
    time_scale = forms.FloatField(min_value=0.01, max_value=100, initial=1.0, help_text="multiplies submit times (0.5 = twice the load)")
    tenants = forms.IntegerField(min_value=1, max_value=200, initial=8, help_text="tenants (leaf queues) jobs are mapped to")
    groups = forms.IntegerField(min_value=1, max_value=50, initial=2)
    max_jobs = forms.IntegerField(min_value=0, initial=0, help_text="0 = every job of the slice")
    generator = forms.ChoiceField(
        required=False, choices=[("", "none: replay the trace"), *((g, GENERATOR_LABELS[g]) for g in GENERATORS)],
        help_text="a synthetic workload instead of the trace: `hours` of its arrivals, drawn afresh for each seed",
    )  # fmt: skip
    rate_scale = forms.FloatField(required=False, min_value=0.001, max_value=1000, initial=GENERATOR_DEFAULTS["rate_scale"],
                                  help_text="multiplies a generator's arrival rates")  # fmt: skip
    deadline_factor = forms.FloatField(required=False, min_value=1, max_value=1e6, initial=GENERATOR_DEFAULTS["deadline_factor"],
                                       help_text="a trace or Table 1 job's deadline: submit + this many ideal run times")  # fmt: skip
    era_slack = forms.FloatField(required=False, min_value=1.5, max_value=1e6, initial=GENERATOR_DEFAULTS["era_slack"],
                                 help_text="ERA jobs: largest window / duration factor")  # fmt: skip
    cura_max_deadline_s = forms.FloatField(required=False, min_value=0, max_value=1e9, initial=GENERATOR_DEFAULTS["cura_max_deadline_s"],
                                           help_text="Cura jobs: largest deadline slack beyond the ideal time (simulated s)")  # fmt: skip
    capacity = forms.CharField(initial="40, 20", help_text="slots per type: map, reduce (SWF, ERA: processors / units)")
    vm_pools = forms.CharField(required=False, label="VM pools",
                               help_text="instead of capacity: VM pools like c2:10, c8:4 (types c2..c12; a VM gives a map slot "
                                         "per vCPU and a reduce slot per 2)")  # fmt: skip
    predictor = forms.ChoiceField(required=False, choices=[(p, p) for p in PREDICTORS], initial="exact",
                                  help_text="task-duration predictor of the dispatcher: exact (known at start) or none")  # fmt: skip
    mechanism = forms.ChoiceField(choices=mechanism_choices, initial="abacus")
    fairshare = forms.ChoiceField(choices=fairshare_choices, initial="hltrf")
    dispatch = forms.ChoiceField(choices=dispatch_choices, initial="stride")
    alpha = forms.FloatField(min_value=0, max_value=1, initial=0.5)
    t_wait = forms.FloatField(min_value=0, initial=30.0, help_text="H-LTRF T_wait (simulated s)")
    vary = forms.ChoiceField(
        required=False, initial="dispatch",
        choices=[("", "nothing (one configuration)"), ("alpha", "alpha"), ("t_wait", "T_wait"), ("fairshare", "fair-share policy"),
                 ("mechanism", "mechanism"), ("dispatch", "dispatch"), ("predictor", "duration predictor")],
    )  # fmt: skip
    values = forms.CharField(required=False, initial="fifo, stride", help_text="comma-separated values of the swept parameter")
    seeds = forms.CharField(initial="0, 1, 2", help_text="comma-separated seeds (budgets, weights, dispatch)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["upload"].help_text += f"; {limit_text()}. A worker reads it after you start the study."

    def clean_capacity(self) -> list[int]:
        values = _floats(self.cleaned_data["capacity"], "capacity")
        if not values or any(v <= 0 or int(v) != v for v in values):
            raise forms.ValidationError("Enter whole slot counts > 0 separated by commas, like 100, 50.")
        return [int(v) for v in values]

    def clean_seeds(self) -> list[int]:
        values = _floats(self.cleaned_data["seeds"], "seeds")
        if not values or any(int(v) != v or v < 0 for v in values):
            raise forms.ValidationError("Enter whole numbers >= 0 separated by commas, like 0, 1, 2.")
        return [int(v) for v in values]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name, default in OPTIONAL_DEFAULTS.items():  # left out of a post: the experiment's default
            if data.get(name) in (None, ""):
                data[name] = default
        vary, raw = data.get("vary", ""), str(data.get("values", "") or "")
        if vary in ("alpha", "t_wait"):
            try:
                data["values"] = _floats(raw, vary)
            except forms.ValidationError as exc:
                self.add_error("values", exc)
        elif vary:
            names = [x.strip() for x in raw.split(",") if x.strip()]
            known = {"fairshare": fairshare_choices, "mechanism": mechanism_choices, "dispatch": dispatch_choices,
                     "predictor": lambda: [(p, p) for p in PREDICTORS]}[vary]()  # fmt: skip
            bad = [n for n in names if n not in {k for k, _ in known}]
            if bad:
                self.add_error("values", f"Unknown {vary} name(s): {', '.join(bad)} (known: {', '.join(k for k, _ in known)}).")
            data["values"] = names
        else:
            data["values"] = []
        if vary and not data.get("values") and "values" not in self.errors:
            self.add_error("values", "Give the values to sweep.")
        if data.get("trace") == "upload" and not data.get("upload") and not data.get("generator"):
            self.add_error("upload", "Choose a file to upload, or pick a repository trace.")
        upload = data.get("upload")
        if upload is not None and upload.size > settings.SIMULATION_UPLOAD_MAX_BYTES:
            self.add_error("upload", f"The file is larger than {limit_text()}.")
        return data

    def upload_to_store(self) -> Any:
        """The uploaded file when the study replays an upload (the view stores it), else None."""
        d = self.cleaned_data
        return d.get("upload") if d["trace"] == "upload" and not d.get("generator") else None

    def trace_path(self, stored: str | None = None) -> str:
        """The trace file's path: a repository trace, or ``stored`` (the upload, stored by ``services.uploads``)."""
        choice = self.cleaned_data["trace"]
        if self.cleaned_data.get("generator") or choice == "fb2009":
            return str(FB2009)
        if choice.startswith("shared:"):
            return str(SHARED_TRACES / Path(choice.removeprefix("shared:")).name)
        assert stored is not None, "store the upload first (services.uploads.upload_store)"
        return stored

    def trace_name(self) -> str:
        """How the pages name the trace: its file name (an upload: the name it was sent with), never a server path."""
        upload = self.upload_to_store()
        return f"upload {Path(str(upload.name)).name}" if upload is not None else Path(self.trace_path("-")).name

    def study_kwargs(self, stored: str | None = None) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "title": d["title"],
            "trace_name": self.trace_name(),
            "uploaded": stored is not None,
            "workload": {"trace": self.trace_path(stored), "trace_format": d["trace_format"],
                         "start_hour": d["start_hour"], "hours": d["hours"],
                         "time_scale": d["time_scale"], "tenants": d["tenants"], "groups": d["groups"], "max_jobs": d["max_jobs"],
                         "workload_seed": 0, "generator": d.get("generator") or "", "rate_scale": d["rate_scale"],
                         "deadline_factor": d["deadline_factor"], "era_slack": d["era_slack"],
                         "cura_max_deadline_s": d["cura_max_deadline_s"]},
            "capacity": d["capacity"],
            "vm_pools": d.get("vm_pools") or "",
            "base": {"mechanism": d["mechanism"], "fairshare": d["fairshare"], "dispatch": d["dispatch"], "alpha": d["alpha"],
                     "t_wait": d["t_wait"], "predictor": d["predictor"]},
            "vary": d.get("vary", ""),
            "values": d["values"],
            "seeds": d["seeds"],
        }  # fmt: skip


class LiveForm(forms.Form):
    """"What if, now": replay the live market's recent arrivals under other settings."""

    window_h = forms.FloatField(min_value=0.01, initial=1.0, label="Window", help_text="simulated hours back from the market's clock")
    vary = forms.ChoiceField(choices=[("alpha", "alpha"), ("t_wait", "T_wait"), ("fairshare", "fair-share policy"),
                                      ("mechanism", "mechanism"), ("dispatch", "dispatch")], initial="alpha")  # fmt: skip
    values = forms.CharField(initial="0.8", help_text="comma-separated values; the market's own setting is added as the baseline")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        vary, raw = data.get("vary", ""), str(data.get("values", "") or "")
        if vary in ("alpha", "t_wait"):
            try:
                data["values"] = _floats(raw, vary)
            except forms.ValidationError as exc:
                self.add_error("values", exc)
        else:
            data["values"] = [x.strip() for x in raw.split(",") if x.strip()]
        if vary and not data.get("values") and "values" not in self.errors:
            self.add_error("values", "Give the values to try.")
        return data


# ---- an experiment's run form (the Experiments page): one typed field per parameter

_KIND_WORDS = {"int": "a whole number", "float": "a number"}


def _kind_of(default: Any, choices: Any = None) -> str:
    """The form field a parameter takes from its default's type and its declared choices
    (``Experiment.choices``): "bool" (a checkbox), "int" or "float" (a number box), "choice" (a
    select), "multi" (a box per choice: a list of choices), "list" (comma-separated values) or "text"."""
    if isinstance(default, bool):
        return "bool"
    if choices is not None:
        return "multi" if isinstance(default, (list, tuple)) else "choice"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, (list, tuple)):
        return "list"
    return "text"


def _shown(value: Any) -> str:
    """A parameter's value as its field shows it: lists comma-separated, numbers as written."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ", ".join(_shown(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else ""
    return json.dumps(value)


def _limit(bound: float | None) -> str:
    return "" if bound is None else f"{bound:g}"


def param_rows(experiment: experiments.Experiment, values: dict[str, Any], errors: dict[str, str]) -> list[dict[str, Any]]:
    """One row per parameter for the run form: ``kind`` (``_kind_of``), ``value`` (the text of a box),
    ``checked``, ``options`` (``[(value, label, selected)]`` of a choice), ``min``/``max`` ("" when
    unbounded; a number list's bounds go into its help), ``help`` and ``error``."""
    rows = []
    for key, value in values.items():
        default, choices = experiment.defaults[key], experiment.choices.get(key)
        kind = _kind_of(default, choices)
        low, high = experiment.bounds.get(key, (None, None))
        chosen = {_shown(v) for v in (value if isinstance(value, (list, tuple)) else [value])}
        help_text = experiment.help.get(key, "")
        if kind == "list" and (low is not None or high is not None):
            span = " to ".join(x for x in (_limit(low), _limit(high)) if x) if low is not None and high is not None else (
                f"at least {_limit(low)}" if low is not None else f"at most {_limit(high)}")
            help_text = f"{help_text} (each {span})" if help_text else f"each {span}"
        rows.append({
            "key": key, "kind": kind, "value": _shown(value), "checked": value in (True, "on"),
            "options": [(_shown(c), _shown(c), _shown(c) in chosen) for c in choices or []],
            "min": _limit(low), "max": _limit(high), "help": help_text, "error": errors.get(key, ""),
        })
    return rows


def posted_values(experiment: experiments.Experiment, post: Any) -> dict[str, Any]:
    """What the run form sent, per parameter, to show it again beside its errors: a box's text, a
    multiple choice's list of ticked values; a parameter not sent keeps its default."""
    out: dict[str, Any] = {}
    for key, default in experiment.defaults.items():
        if _kind_of(default, experiment.choices.get(key)) == "multi":
            out[key] = _picked(post, key, experiment.choices[key]) if "typed_form" in post else default
        else:
            out[key] = post.get(f"p_{key}", default if _kind_of(default) != "bool" or "typed_form" not in post else "")
    return out


def _picked(post: Any, key: str, choices: Any = ()) -> list[str]:
    """The ticked values of a multiple choice: several ``p_<key>`` fields (the page's boxes), or one
    comma-separated text (a script) in which a choice holding a comma ("Tiresias, three limits") stays whole."""
    getlist = getattr(post, "getlist", None)
    raw = getlist(f"p_{key}") if getlist is not None else post.get(f"p_{key}", [])
    if isinstance(raw, (list, tuple)) and len(raw) != 1:
        return [str(x).strip() for x in raw if str(x).strip()]
    text = str(raw[0] if isinstance(raw, (list, tuple)) else raw)
    known = {_shown(c) for c in choices}
    if text.strip() in known or "," not in text:
        return [text.strip()] if text.strip() else []
    parts, out, k = [p.strip() for p in text.split(",")], [], 0
    while k < len(parts):
        end = next((j for j in range(len(parts), k, -1) if ", ".join(parts[k:j]) in known), k + 1)
        out.append(", ".join(parts[k:end]))
        k = end
    return [x for x in out if x]


def _item(raw: str, like: list[Any]) -> Any:
    """One comma-separated list item, typed like the default list's items (numbers stay numbers).
    Raises ValueError when a number was expected and ``raw`` is not one."""
    if like and isinstance(like[0], str):
        return raw
    if like and all(isinstance(v, int) and not isinstance(v, bool) for v in like):
        return int(raw) if raw.lstrip("+-").isdigit() else float(raw)
    if like:
        return float(raw)
    try:  # an empty default: numbers where they read as numbers, text otherwise
        return float(raw) if "." in raw or "e" in raw.lower() else int(raw)
    except ValueError:
        return raw


def _typed(key: str, raw: str, default: Any, post: Any, choices: Any = None) -> Any:
    """A field's text as the parameter's type (``_kind_of``). Raises ValueError with the words to show."""
    kind = _kind_of(default, choices)
    if kind == "bool":
        return post.get(f"p_{key}") in ("on", "true", "1")
    if kind in ("choice", "multi"):
        by_text = {_shown(c): c for c in choices}
        picked = [raw] if kind == "choice" else _picked(post, key, choices)
        unknown = [x for x in picked if x not in by_text]
        if unknown:
            raise ValueError(f"Choose among {'; '.join(by_text)} ({', '.join(unknown)} is not one).")
        if kind == "multi" and not picked:
            raise ValueError("Tick at least one.")
        return by_text[raw] if kind == "choice" else [by_text[x] for x in picked]
    if kind == "text":
        return raw
    if kind == "list":
        if raw.startswith("["):  # JSON, as the API and older bookmarks send it
            return json.loads(raw)
        try:
            return [_item(part.strip(), list(default)) for part in raw.split(",") if part.strip()]
        except ValueError:
            raise ValueError(f"Enter numbers separated by commas, like {_shown(default) or '1, 2'}.") from None
    try:
        return int(raw) if kind == "int" and raw.lstrip("+-").isdigit() else float(raw)
    except ValueError:
        raise ValueError(f"Enter {_KIND_WORDS[kind]} like {json.dumps(default)}.") from None


def _duration(seconds: float) -> str:
    """Wall seconds in words: "about 40 s", "about 6 min", "about 2.5 h"."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def run_estimate(experiment: experiments.Experiment, past: list[float], params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The wall time a run with ``params`` (default: the defaults; validated here) takes, before it starts:
    ``{"seconds", "text", "basis"}`` from the experiment's own model (``Experiment.estimate``, which scales
    with the work the parameters ask for), else the median of its last finished runs (whatever their
    parameters); None for a first run without a model, or parameters the model refuses."""
    if experiment.estimate is not None:
        try:
            e = experiment.estimate(experiment.params(params or {}))
        except (TypeError, ValueError):
            return None
        return {"seconds": round(e.seconds, 1), "text": _duration(e.seconds),
                "basis": f"{e.basis}; on a machine doing 10^7 Python additions in {e.reference_additions_s:g} s"}
    if past:
        median = statistics.median(past)
        return {"seconds": round(median, 1), "text": _duration(median),
                "basis": f"the median of its last {len(past)} finished run{'s' if len(past) > 1 else ''} on this server, "
                         "whatever their parameters"}
    return None


def parse_params(experiment: experiments.Experiment, post: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """An experiment's form fields ``p_<key>`` -> params, and per-field errors. Each field is typed by its default
    and its declared choices (``_kind_of``): a checkbox, a number box, a select, a box per choice, comma-separated
    values, or text; an empty field keeps the default. The experiment itself then checks each value
    (``Experiment.params``: its type, its declared choices and bounds), so an error names its field."""
    params: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, default in experiment.defaults.items():
        choices = experiment.choices.get(key)
        kind = _kind_of(default, choices)
        raw = ", ".join(_picked(post, key, choices)) if kind == "multi" else str(post.get(f"p_{key}", "")).strip()
        if raw == "" and (kind not in ("bool", "multi") or "typed_form" not in post):
            continue  # an unticked box is sent as nothing: it means False (or no choice) only from the page's own form
        try:
            value = _typed(key, raw, default, post, choices)
        except (ValueError, json.JSONDecodeError) as exc:
            errors[key] = str(exc) if not isinstance(exc, json.JSONDecodeError) else f"Enter a list like {json.dumps(default)}."
            continue
        if isinstance(default, float) and isinstance(value, int):
            value = float(value)
        try:
            experiment.params({key: value})
        except (TypeError, ValueError) as exc:
            said = str(exc).split(": ", 1)[-1]
            errors[key] = said[:1].upper() + said[1:] + ("" if said.endswith(".") else ".")
            continue
        params[key] = value
    return params, errors
