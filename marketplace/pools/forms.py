"""Forms of the VM pools pages: field checks here, the rules in ``services.pools``."""

from __future__ import annotations

from django import forms

from scheduler.cura.profiles import PAPER_PROFILES

JOB_TYPES = [(t, f"Type {t} ({PAPER_PROFILES[t].name}, paper 004 Table {['II', 'III', 'IV', 'V'][t - 1]})") for t in sorted(PAPER_PROFILES)]


class PoolSettingsForm(forms.Form):
    beta = forms.FloatField(
        min_value=0, help_text="Reconfigure only when the estimated benefit exceeds beta x the reconfiguration cost.",
    )
    reconf_window_s = forms.FloatField(
        min_value=0.001, label="Reconfiguration window (s)", help_text="Simulated seconds of arrivals per decision.",
    )
    boot_s = forms.FloatField(min_value=0, label="VM boot (s)")
    shutdown_s = forms.FloatField(min_value=0, label="VM shutdown (s)")
    framework_start_s = forms.FloatField(
        min_value=0, label="Framework start (s)", help_text="Paid by every job on pool VMs (10 s in the paper).",
    )
    core_budget = forms.IntegerField(
        min_value=0, max_value=1_000_000_000, label="Core budget (vCPUs)", help_text="Servers x cores; 0 keeps the pools' current cores.",
    )
    reason = forms.CharField(max_length=200, required=False)


class PoolSizeForm(forms.Form):
    pool = forms.IntegerField(widget=forms.HiddenInput)
    size = forms.IntegerField(min_value=0, max_value=100_000, label="VMs")
    reason = forms.CharField(max_length=200, required=False)


class VMTypeForm(forms.Form):
    name = forms.CharField(max_length=40)
    vcpus = forms.IntegerField(min_value=1, max_value=1024, label="vCPUs")
    memory_gb = forms.FloatField(min_value=0.001, label="Memory (GB)")
    price = forms.DecimalField(min_value=0, max_digits=24, decimal_places=12, label="Unit price (per VM-second)")
    reason = forms.CharField(max_length=200, required=False)


class CuraJobForm(forms.Form):
    job_type = forms.TypedChoiceField(choices=JOB_TYPES, coerce=int, label="Job (profiled)")
    deadline_in_s = forms.FloatField(min_value=0.001, label="Deadline (s from now, market clock)")
    job_class = forms.CharField(required=False, max_length=60, label="Job class (optional)",
                                help_text="Your name for repeats of this job: its completed runs refine its profile.")
    runtime_scale = forms.FloatField(required=False, min_value=0.01, max_value=100, label="Real run / profile (simulation)",
                                     help_text="How long the job really runs relative to its built-in profile; 1 if empty.")

    def clean_runtime_scale(self) -> float:
        value = self.cleaned_data.get("runtime_scale")
        return 1.0 if value is None else float(value)
