"""Calibrations (list, fit from uploaded runs, report, residuals, activate) and estimate."""

from __future__ import annotations

from typing import Any

from celery import current_app as app
from celery.result import AsyncResult
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiRequest, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import Throttled
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from advisor.api.calibration_access import (
    ESTIMATE_ROW_COLUMNS,
    ESTIMATE_ROW_OPTIONAL,
    ColumnType,
    estimate_rows,
)
from advisor.api.errors import Conflict, FieldErrors, QueryParameterErrors, pointer
from advisor.api.parsers import CSVTextParser, JSONParser
from advisor.api.runs_input import measured_runs_or_400, runs_data, runs_or_400, runs_problem
from advisor.api.schema import NOT_BLANK_NAME
from advisor.api.views.base import IdQueryField, query_params
from advisor.calibrations import (
    NAME_MAX_LENGTH,
    CalibrationFitFailed,
    CalibrationNameError,
    CalibrationNotReady,
    FitOverBudget,
    TooManyQueuedFits,
    active_calibration_id,
    calibration_activate,
    calibration_submit,
    calibration_visible_to,
    calibrations_visible_to,
    held_out_accuracy,
    with_measurement_errors,
)
from advisor.fit_recovery import STALLED, shown_state
from advisor.models import Calibration
from core.api.budget import WorkBudgetExceeded
from core.api.renderers import JSON_AND_CSV
from core.auth import signed_in_user
from core.queueing import QueueUnavailable
from estimator.calibrate import Calibration as CalibrationDocument
from estimator.calibrate import fit_warnings
from estimator.prediction import borrowed_family_notes
from estimator.runs import COLUMNS, REQUIRED, RunValidationError
from pricing.api.refresh import QueueDown, task_status


class CalibrationSerializer(serializers.ModelSerializer):
    shared = serializers.SerializerMethodField(help_text="Shared with every user (the default or a CLI fit).")
    is_active = serializers.SerializerMethodField(help_text="The one your advice and estimates use.")
    loo_mape = serializers.FloatField(
        allow_null=True,
        help_text="Null until it is fitted (state pending, fitting or failed). "
        "Held-out MAPE of tokens/s (fraction), held out as the report's `held_out` says: the shipped "
        "default leave-one-config-family-out; a user's calibration leave-one-configuration-out up to 10 runs, else "
        "10-fold by config family (identical configurations always held out together).",
    )
    held_out = serializers.SerializerMethodField(
        help_text="How held_out_median_ape was measured for a scenario naming no software stack, as its Advice's "
        "calibration.held_out says it (leave-one-stack-out for the shipped calibration); null where there is none."
    )
    held_out_median_ape = serializers.SerializerMethodField(
        help_text="Held-out median absolute percentage error of tokens/s (fraction) that applies to a scenario naming "
        "no software stack: the figure its Advice (calibration.held_out_median_ape), page, PDF and XLSX state."
    )
    baseline_held_out_median_ape = serializers.SerializerMethodField(
        help_text="A constant-MFU-per-GPU guess held out the same way (fraction), for comparison."
    )
    state = serializers.SerializerMethodField(
        help_text=(
            "pending/fitting (a task is fitting it), ready, failed (see error), or stalled: still waiting "
            "CALIBRATION_FIT_STALLED_AFTER_S after it was queued, so its task was lost; it is queued again."
        )
    )

    class Meta:
        model = Calibration
        fields = [
            "id",
            "name",
            "runs",
            "loo_mape",
            "held_out",
            "held_out_median_ape",
            "baseline_held_out_median_ape",
            "is_default",
            "shared",
            "is_active",
            "created_at",
            "updated_at",
            "state",
            "error",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "updated_at": {
                "help_text": "When a new fit replaced it under the same id and name (`calibrate --replace`): whoever "
                "activated it predicts with the new fit since. Null: never replaced."
            },
        }

    @extend_schema_field(serializers.ChoiceField(choices=[*Calibration.State.values, STALLED]))
    def get_state(self, obj: Calibration) -> str:
        return shown_state(calibration=obj)

    def get_shared(self, obj: Calibration) -> bool:
        return obj.owner_id is None

    def _held_out(self, obj: Calibration) -> dict[str, Any]:
        """held_out_accuracy of ``obj``, parsed once for its three fields."""
        cached: dict[int, dict[str, Any]] = self.__dict__.setdefault("_held_out_by_pk", {})
        if obj.pk not in cached:
            cached[obj.pk] = held_out_accuracy(row=obj)
        return cached[obj.pk]

    def get_held_out(self, obj: Calibration) -> str | None:
        held: str | None = self._held_out(obj)["held_out"]
        return held

    def get_held_out_median_ape(self, obj: Calibration) -> float | None:
        median: float | None = self._held_out(obj)["held_out_median_ape"]
        return median

    def get_baseline_held_out_median_ape(self, obj: Calibration) -> float | None:
        baseline: float | None = self._held_out(obj)["baseline_held_out_median_ape"]
        return baseline

    def get_is_active(self, obj: Calibration) -> bool:
        return obj.pk == self.context.get("active_id")


class CalibrationDetailSerializer(CalibrationSerializer):
    report = serializers.SerializerMethodField(help_text="Fit report (errors overall, per GPU, per source).")
    params = serializers.SerializerMethodField(help_text="Fitted parameters by name.")

    class Meta(CalibrationSerializer.Meta):
        fields = [*CalibrationSerializer.Meta.fields, "report", "params"]
        read_only_fields = fields

    def get_report(self, obj: Calibration) -> dict[str, Any]:
        return {k: v for k, v in (obj.document.get("report") or {}).items() if k != "residuals"}

    def get_params(self, obj: Calibration) -> dict[str, float]:
        return dict(obj.document.get("params") or {})


class CalibrationQueuedSerializer(CalibrationDetailSerializer):
    """A large upload, stored with state pending, and the task that fits it (``context["task"]``: task_status)."""

    task_id = serializers.SerializerMethodField(help_text="The fit task's id.")
    status_url = serializers.SerializerMethodField(
        help_text="GET it (or this calibration) until the task ends and the state is ready or failed."
    )

    class Meta(CalibrationDetailSerializer.Meta):
        fields = [*CalibrationDetailSerializer.Meta.fields, "task_id", "status_url"]
        read_only_fields = fields

    def get_task_id(self, obj: Calibration) -> str:
        task_id: str = self.context["task"]["task_id"]
        return task_id

    @extend_schema_field(OpenApiTypes.URI)
    def get_status_url(self, obj: Calibration) -> str:
        status_url: str = self.context["task"]["status_url"]
        return status_url


class ResidualSerializer(serializers.Serializer):
    row = serializers.IntegerField()
    gpu = serializers.CharField()
    # The stub sees a clash with Field.source; DRF's SerializerMetaclass moves declared fields off the class.
    source = serializers.CharField(allow_blank=True)  # type: ignore[assignment]
    measured_tokens_per_s = serializers.FloatField()
    predicted_tokens_per_s = serializers.FloatField(allow_null=True)


_RUNS_DOC = (
    f"Profiled runs, as a `text/csv` body (DESIGN.md columns: {', '.join(COLUMNS)}; required: {', '.join(REQUIRED)})"
    ' or as JSON `{"runs": [{column: value, ...}, ...]}`.'
)
_RUN_RECORD = {"type": "object", "additionalProperties": True, "description": "One profiled run: CSV column -> value."}
# Closed, as runs_input refuses any other top-level field.
_JSON_RUNS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"runs": {"type": "array", "items": _RUN_RECORD, "minItems": 1}},
    "required": ["runs"],
}
_JSON_FIT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": NAME_MAX_LENGTH, "pattern": NOT_BLANK_NAME},
        "runs": {"type": "array", "items": _RUN_RECORD, "minItems": 1},
    },
    "required": ["name", "runs"],
}
_CSV_BODY = {"type": "string", "description": "CSV text with a header row."}


def _context(request: Request) -> dict[str, Any]:
    return {"active_id": active_calibration_id(user=signed_in_user(request)), "request": request}


def _owned_or_shared(request: Request, calibration_id: int) -> Calibration:
    return calibration_visible_to(user=signed_in_user(request), calibration_id=calibration_id)


class CalibrationListView(GenericAPIView):
    serializer_class = CalibrationSerializer
    renderer_classes = JSON_AND_CSV
    parser_classes = [JSONParser, CSVTextParser]
    task_queue_methods = ("POST",)  # a large upload is fitted by a task: 503 when the queue does not answer

    def get_queryset(self) -> QuerySet[Calibration]:
        return calibrations_visible_to(user=signed_in_user(self.request))

    @property
    def throttle_scope(self) -> str | None:
        # Only fitting is heavy; listing is an ordinary request.
        return "advice" if self.request.method == "POST" else None

    @extend_schema(
        summary="Calibrations you can use (yours and the shared ones)", responses=CalibrationSerializer(many=True)
    )
    def get(self, request: Request) -> Response:
        context = _context(request)  # first: it loads the shipped default if bootstrap has not run
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(CalibrationSerializer(page, many=True, context=context).data)

    @extend_schema(
        summary="Fit a calibration to uploaded profiled runs",
        description=_RUNS_DOC + " With a CSV body give the name as `?name=`.",
        parameters=[
            OpenApiParameter(
                "name",
                {"type": "string", "minLength": 1, "pattern": NOT_BLANK_NAME},
                description="Name, for a text/csv body.",
            )
        ],
        request={"application/json": OpenApiRequest(_JSON_FIT), "text/csv": OpenApiRequest(_CSV_BODY)},
        responses={
            201: CalibrationDetailSerializer,
            202: OpenApiResponse(
                CalibrationQueuedSerializer,
                description="A large upload: stored with state pending; the body adds task_id and status_url "
                "(GET it, or this calibration, until state is ready or failed).",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = runs_data(request)
        name: object
        if isinstance(data, str):  # text/csv: the name comes in the query
            name = request.query_params.get("name", "")
            if not isinstance(name, str) or not name.strip():
                raise QueryParameterErrors({"name": ["required with a text/csv body: the calibration's name"]})
        else:
            name = data.get("name") if isinstance(data, dict) else None
            if not isinstance(name, str) or not name.strip():
                raise FieldErrors([{"pointer": pointer("name"), "detail": "required: the calibration's name (text)"}])
        runs = measured_runs_or_400(data, other_fields=("name",), more_errors=with_measurement_errors)
        try:
            row = calibration_submit(owner=signed_in_user(request), name=name, runs=runs)
        except RunValidationError as error:
            raise runs_problem(error, csv_body=isinstance(data, str)) from error
        except CalibrationNameError as error:
            detail = str(error).removeprefix("name: ")
            if isinstance(data, str):
                raise QueryParameterErrors({"name": [detail]}) from error
            raise FieldErrors([{"pointer": pointer("name"), "detail": detail}]) from error
        except CalibrationFitFailed as error:
            raise FieldErrors([{"pointer": pointer("runs"), "detail": error.reason, "code": "cannot_fit"}]) from error
        except QueueUnavailable as error:
            raise QueueDown.from_unavailable(error) from error
        except FitOverBudget as error:
            raise WorkBudgetExceeded(str(error)) from error
        except TooManyQueuedFits as error:
            raise Throttled(wait=error.retry_after_s, detail=str(error)) from error
        location = reverse("v1:calibration-detail", kwargs={"calibration_id": row.pk}, request=request)
        if row.state == Calibration.State.READY:
            body = CalibrationDetailSerializer(row, context=_context(request)).data
            return Response(body, status=status.HTTP_201_CREATED, headers={"Location": location})
        # A large upload: the fit runs in a task; poll the task (or the calibration's state).
        task = task_status(request, AsyncResult(row.task_id, app=app))
        body = CalibrationQueuedSerializer(row, context={**_context(request), "task": task}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": location})


class CalibrationDetailView(GenericAPIView):
    serializer_class = CalibrationDetailSerializer

    @extend_schema(summary="A calibration with its fit report and parameters", responses=CalibrationDetailSerializer)
    def get(self, request: Request, calibration_id: int) -> Response:
        row = _owned_or_shared(request, calibration_id)
        return Response(CalibrationDetailSerializer(row, context=_context(request)).data)


class CalibrationResidualsView(GenericAPIView):
    serializer_class = ResidualSerializer
    renderer_classes = JSON_AND_CSV
    pagination_class = None

    @extend_schema(
        summary="Measured vs predicted tokens/s for each run of the fit", responses=ResidualSerializer(many=True)
    )
    def get(self, request: Request, calibration_id: int) -> Response:
        row = _owned_or_shared(request, calibration_id)
        residuals = (row.document.get("report") or {}).get("residuals") or []
        return Response(ResidualSerializer(residuals, many=True).data)


class CalibrationActivateView(GenericAPIView):
    serializer_class = CalibrationSerializer

    @extend_schema(
        summary="Use this calibration for your advice and estimates",
        request=None,
        responses={
            200: CalibrationSerializer,
            409: OpenApiResponse(
                description="The calibration is still queued or fitting, or its fit failed (GET it for its state and "
                "error): it cannot be activated."
            ),
        },
    )
    def post(self, request: Request, calibration_id: int) -> Response:
        row = _owned_or_shared(request, calibration_id)
        try:
            calibration_activate(user=signed_in_user(request), calibration=row)
        except CalibrationNotReady as error:
            raise Conflict(str(error).removeprefix("calibration: ")) from error
        return Response(CalibrationSerializer(row, context=_context(request)).data)


class EstimateQuery(serializers.Serializer):
    calibration = IdQueryField(
        required=False, min_value=1, help_text="Calibration id; default: your active calibration."
    )


@extend_schema_field({"oneOf": [{"type": "boolean"}, {"type": "string", "enum": ["selective"]}]})
class CheckpointingField(serializers.JSONField):
    """activation_checkpointing: true, false or selective."""


def _row_field(column_type: ColumnType, *, required: bool) -> serializers.Field:
    options: dict[str, Any] = {"allow_null": column_type.nullable, "required": required}
    if column_type.also_text:
        return CheckpointingField(**options)
    fields: dict[type, type[serializers.Field]] = {
        int: serializers.IntegerField,
        float: serializers.FloatField,
        bool: serializers.BooleanField,
    }
    return fields.get(column_type.kind, serializers.CharField)(**options)


class EstimateRowSerializer(serializers.Serializer):
    """One estimated row: the DESIGN.md profiled-run columns (an empty cell null; empty layout cells filled with
    the chosen layout where one fits), the predicted columns (null where the run fits no layout), prediction_note
    (why not; null where there is a prediction), and any other column of the input, as the text given."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            column: _row_field(column_type, required=column not in ESTIMATE_ROW_OPTIONAL)
            for column, column_type in ESTIMATE_ROW_COLUMNS.items()
        }


class EstimateResultSerializer(serializers.Serializer):
    calibration = CalibrationSerializer()
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="Rows predicted with less evidence (a GPU family without calibration runs, borrowing another "
        "family's efficiencies; a GPU family or stack a user's calibration leaves to the calibration it refines), "
        "then what the calibration's fit says against its use (runs far below any published MFU, a held-out miss "
        "too large to rely on or worse than the constant-MFU baseline, an error that grows with the GPU count, "
        "merged duplicate rows); empty when nothing.",
    )
    count = serializers.IntegerField()
    results = EstimateRowSerializer(
        many=True,
        help_text="The input rows with predicted_tokens_per_s, predicted_step_time_s, predicted_mfu (null when "
        "the run does not fit), fits_memory, and empty layout cells filled with the chosen layout.",
    )


class EstimateView(GenericAPIView):
    serializer_class = EstimateResultSerializer
    renderer_classes = JSON_AND_CSV
    parser_classes = [JSONParser, CSVTextParser]
    throttle_scope = "advice"

    @extend_schema(
        summary="Predict profiled-run rows with a calibration",
        description=_RUNS_DOC + " `?format=csv` (or `Accept: text/csv`) returns the rows as CSV.",
        parameters=[EstimateQuery],
        request={"application/json": OpenApiRequest(_JSON_RUNS), "text/csv": OpenApiRequest(_CSV_BODY)},
        responses=EstimateResultSerializer,
    )
    def post(self, request: Request) -> Response:
        query = query_params(EstimateQuery, request)
        if "calibration" in query:
            try:
                row = _owned_or_shared(request, query["calibration"])
            except Calibration.DoesNotExist as error:
                raise QueryParameterErrors({"calibration": ["no such calibration"]}) from error
        else:
            user = signed_in_user(request)
            row = calibration_visible_to(user=user, calibration_id=active_calibration_id(user=user))
        if row.state != Calibration.State.READY:
            raise QueryParameterErrors({"calibration": [f"not ready: {row.get_state_display().lower()}"]})
        runs = runs_or_400(runs_data(request))
        rows = estimate_rows(runs=runs, calibration=row)
        calibration = CalibrationSerializer(row, context=_context(request)).data
        # The same notes `manage.py estimate` prints beside its CSV: rows whose GPU family the calibration has no
        # runs of (predicted from another family's efficiencies), rows a user's calibration leaves to its base.
        notes = borrowed_family_notes(runs, CalibrationDocument.from_dict(row.document))
        warnings = [*notes, *fit_warnings(name=row.name, report=(row.document or {}).get("report") or {})]
        return Response({"calibration": calibration, "warnings": warnings, "count": len(rows), "results": rows})
