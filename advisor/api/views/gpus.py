from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.renderers import JSON_AND_CSV
from estimator.specs import UnknownGpuError, all_gpus, get_gpu


class GpuSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    family = serializers.CharField()
    memory_gb = serializers.FloatField()
    memory_bw_gbps = serializers.FloatField(help_text="Device memory bandwidth, GB/s.")
    peak_tflops = serializers.DictField(child=serializers.FloatField(), help_text="Dense peak TFLOP/s per precision.")
    nvlink_gbps = serializers.FloatField(help_text="Per-GPU scale-up bandwidth, GB/s.")
    gpus_per_node = serializers.IntegerField(help_text="GPUs in the typical server.")
    inter_node_gbps = serializers.FloatField(help_text="Scale-out bandwidth of one typical server, Gb/s.")
    tdp_w = serializers.FloatField()
    server_power_kw = serializers.FloatField()
    # The stub sees a clash with Field.source; DRF's SerializerMetaclass moves declared fields off the class.
    source = serializers.CharField()  # type: ignore[assignment]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["peak_tflops"] = dict(instance.peak_tflops)
        return data


class GpuListView(GenericAPIView):
    serializer_class = GpuSerializer
    renderer_classes = JSON_AND_CSV
    pagination_class = None

    @extend_schema(summary="GPU specifications (every id a Scenario may name)", responses=GpuSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(GpuSerializer(all_gpus(), many=True).data)


class GpuDetailView(GenericAPIView):
    serializer_class = GpuSerializer

    @extend_schema(summary="One GPU's specification", responses=GpuSerializer)
    def get(self, request: Request, gpu_id: str) -> Response:
        try:
            spec = get_gpu(gpu_id)
        except UnknownGpuError as error:
            raise NotFound(str(error)) from error
        return Response(GpuSerializer(spec).data)
