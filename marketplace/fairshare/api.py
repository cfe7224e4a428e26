"""Fair-share API: why a job waits (Kueue's visibility API, in fair-share and economic
terms) and the sshare-like table (paper 002, Sec. 4-5). Reads only."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.api.conventions import request_tenant
from marketplace.fairshare.selectors import fairshare_table, job_waiting
from marketplace.market import selectors


class JobWaitingView(APIView):
    """Why the caller's job waits: per resource type its position in its leaf queue, the
    jobs ahead and their budgets, the queue ahead at each level of the tree and by how much
    usage per weight, its wait against T_wait, its share; and an estimated start
    (simulated seconds, if no other job arrives). ``{"waiting": false}`` when it is not waiting."""

    @extend_schema(responses={200: OpenApiResponse(description="The explanation (see job_waiting).")})
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(selectors.tenant_jobs(tenant=request_tenant(request)), pk=pk)
        explanation = job_waiting(job=job)
        if explanation is None:
            return Response({"job": job.pk, "waiting": False})
        return Response({"job": job.pk, "waiting": True} | explanation)


class FairShareView(APIView):
    """Per queue and resource type: weight, fair fraction, share S_i, min / max share,
    accumulated usage (as the policy weighs it, and measured), fairness degree now (null:
    infinite), demand and running units (Slurm's ``sshare``)."""

    @extend_schema(responses={200: OpenApiResponse(description="The table (see fairshare_table).")})
    def get(self, request: Request) -> Response:
        return Response(fairshare_table(market=selectors.market_default()))
