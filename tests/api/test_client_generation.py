"""A procurement integrator's path: generate a typed Python client from the served document with
openapi-python-client. Every operation and document model must come out (only the PDF body may stay
binary), and the generated models must read real responses."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.examples import DESIGN_SCENARIO, scenario

pytestmark = pytest.mark.django_db

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
# POST /advice, POST/PUT /scenarios..., everything a purchasing flow calls.
OPERATIONS = [
    "v1_advice_create",
    "v1_scenarios_create",
    "v1_scenarios_list",
    "v1_scenarios_retrieve",
    "v1_scenarios_update",
    "v1_scenarios_destroy",
    "v1_scenarios_advice_retrieve",
    "v1_scenarios_proposals_create",
    "v1_scenarios_proposal_pdf_retrieve",
    "v1_scenarios_versions_list",
    "v1_scenarios_versions_retrieve",
    "v1_proposals_list",
    "v1_proposals_share_links_create",
    "v1_scenarios_share_links_list",
    "v1_scenarios_share_links_destroy",
    "v1_proposals_retrieve",
    "v1_proposals_proposal_xlsx_retrieve",
    "v1_offers_csv_list",
    "v1_offers_list",
    "v1_offers_history_list",
    "v1_feeds_list",
    "v1_gpus_list",
    "v1_tokens_create",
]
GUIDE_CONFIG = """post_hooks: []
content_type_overrides:
  application/pdf: application/octet-stream
  application/vnd.openxmlformats-officedocument.spreadsheetml.sheet: application/octet-stream
"""
MODELS = [
    "scenario",
    "scenario_version_list_item",
    "share_link",
    "scenario_request",
    "scenario_output",
    "scenario_training_workload",
    "scenario_inference_workload",
    "scenario_parallelism",
    "scenario_workload_model",
    "fleet_plan_input",
    "fleet_plan",
    "training_advice",
    "inference_advice",
    "offer",
]


@pytest.fixture
def generated(client, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    document = client.get("/api/schema/?format=json")
    assert document.status_code == 200
    (tmp_path / "openapi.json").write_text(document.content.decode())
    # The guide's config: binary bodies as files; no formatter needed to generate.
    (tmp_path / "config.yml").write_text(GUIDE_CONFIG)
    result = subprocess.run(
        [
            str(GENERATOR if GENERATOR.exists() else shutil.which("openapi-python-client")),
            "generate",
            "--path",
            "openapi.json",
            "--config",
            "config.yml",
            "--meta",
            "none",
            "--output-path",
            "gpu_advisor_client",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "gpu_advisor_client", result.stdout + result.stderr
    for name in [m for m in sys.modules if m == "gpu_advisor_client" or m.startswith("gpu_advisor_client.")]:
        del sys.modules[name]


def test_every_operation_and_model_is_generated(generated) -> None:  # type: ignore[no-untyped-def]
    package, output = generated
    assert "Unable to" not in output and "Failure to process" not in output, output
    # Only the CSV alternatives of two request bodies (JSON is offered beside them) may be skipped.
    for line in output.splitlines():
        if line.startswith("Unsupported content type") or line.startswith("Cannot parse response"):
            assert "text/csv" in line, line
    functions = {path.stem for path in (package / "api" / "v1").glob("*.py")}
    assert set(OPERATIONS) <= functions, sorted(set(OPERATIONS) - functions)
    models = {path.stem for path in (package / "models").glob("*.py")}
    assert set(MODELS) <= models, sorted(set(MODELS) - models)


def test_generated_models_read_real_responses(generated, alice) -> None:  # type: ignore[no-untyped-def]
    from pricing.services import load_bundled_data

    load_bundled_data()
    models = importlib.import_module("gpu_advisor_client.models")
    created = alice.post("/api/v1/scenarios", {"name": "flow", "scenario": scenario()}, format="json")
    assert created.status_code == 201, created.content
    fetched = alice.get(f"/api/v1/scenarios/{created.json()['id']}")
    saved = models.ScenarioOutput.from_dict(fetched.json())
    assert saved.id == created.json()["id"] and saved.scenario is not None

    training = alice.post("/api/v1/advice", DESIGN_SCENARIO, format="json").json()
    advice = models.TrainingAdvice.from_dict(training)
    assert advice.sizes[0].gpus == training["sizes"][0]["gpus"]
    assert advice.recommendation.action == training["recommendation"]["action"]
    inference_doc = Path(__file__).resolve().parents[2] / "examples" / "inference-service.json"
    inference = alice.post("/api/v1/advice", json.loads(inference_doc.read_text()), format="json").json()
    assert models.InferenceAdvice.from_dict(inference).sizes[0].tp == inference["sizes"][0]["tp"]

    # The Scenario model reads both workloads into their own classes (the discriminator on workload.kind), and
    # an advised layout goes back into workload.parallelism in the client's types.
    typed = models.Scenario.from_dict(training["scenario"])
    assert isinstance(typed.workload, models.ScenarioTrainingWorkload)
    # The model is ONE class with its geometry typed (not a name-only and a params_b-only class with the rest
    # left in additional_properties).
    model = typed.workload.model
    assert isinstance(model, models.ScenarioWorkloadModel) and not hasattr(model, "additional_properties")
    assert (model.params_b, model.layers) == (training["scenario"]["workload"]["model"]["params_b"], 32)
    assert isinstance(models.Scenario.from_dict(inference["scenario"]).workload, models.ScenarioInferenceWorkload)
    layout = {k: v for k, v in training["sizes"][0]["layout"].items() if v is not None}
    fed_back = models.ScenarioParallelism.from_dict(layout)
    assert fed_back.to_dict() == layout


@pytest.mark.django_db(transaction=True)
def test_the_integration_guide_flow_runs_with_the_generated_client(generated, live_server, user) -> None:  # type: ignore[no-untyped-def]
    """The API docs' guide, step by step, with the generated client against the live server."""
    from advisor.api.tokens import api_token_create
    from pricing.services import load_bundled_data

    load_bundled_data()
    client_module = importlib.import_module("gpu_advisor_client")
    models = importlib.import_module("gpu_advisor_client.models")
    key = api_token_create(user=user, name="integration").key
    client = client_module.AuthenticatedClient(base_url=live_server.url, token=key, prefix="Token")

    body = models.ScenarioInputRequest.from_dict({"name": "7B pretraining", "scenario": scenario()})
    create = importlib.import_module("gpu_advisor_client.api.v1.v1_scenarios_create")
    saved = create.sync(client=client, idempotency_key="guide-1", body=body)
    again = create.sync(client=client, idempotency_key="guide-1", body=body)
    assert isinstance(saved, models.ScenarioOutput) and again.id == saved.id

    advice_op = importlib.import_module("gpu_advisor_client.api.v1.v1_scenarios_advice_retrieve")
    advice = advice_op.sync(saved.id, client=client)
    assert isinstance(advice, models.TrainingAdvice)
    assert advice.recommendation.action in ("rent", "buy")
    chosen = next(size for size in advice.sizes if size.gpus == advice.recommendation.gpus)
    assert chosen.rent.usd_per_run_p10 <= chosen.rent.usd_per_run <= chosen.rent.usd_per_run_p90

    issue = importlib.import_module("gpu_advisor_client.api.v1.v1_scenarios_proposals_create")
    proposal = issue.sync(saved.id, client=client, idempotency_key="guide-2")
    assert isinstance(proposal, models.Proposal) and proposal.scenario_id == saved.id
    pdf = importlib.import_module("gpu_advisor_client.api.v1.v1_proposals_proposal_pdf_retrieve")
    document = pdf.sync(proposal.id, client=client)
    assert document.payload.read().startswith(b"%PDF")


@pytest.mark.django_db(transaction=True)
def test_the_purchasing_flow_runs_through_the_generated_models(generated, live_server, user) -> None:  # type: ignore[no-untyped-def]
    """A procurement tool's whole flow, every request built from the generated classes (no dicts) and every answer
    read into them: training and inference scenarios, their advice, a size's layout pinned with PUT + If-Match,
    a proposal and its PDF, offers and one offer's history by id, a fleet saved and planned."""
    from advisor.api.tokens import api_token_create
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    m = importlib.import_module("gpu_advisor_client.models")
    api = {
        name: importlib.import_module(f"gpu_advisor_client.api.v1.v1_{name}")
        for name in (
            "advice_create",
            "scenarios_create",
            "scenarios_retrieve",
            "scenarios_update",
            "scenarios_advice_retrieve",
            "scenarios_proposals_create",
            "proposals_proposal_pdf_retrieve",
            "proposals_proposal_xlsx_retrieve",
            "offers_list",
            "offers_csv_list",
            "gpus_csv_list",
            "offers_history_list",
            "fleets_create",
            "fleets_plan_retrieve",
            "fleet_plans_create",
        )
    }
    client = importlib.import_module("gpu_advisor_client").AuthenticatedClient(
        base_url=live_server.url,
        token=api_token_create(user=user, name="procurement").key,
        prefix="Token",
        raise_on_unexpected_status=True,
    )
    training = m.ScenarioRequest(
        gpu=m.ScenarioRequestGpu.H100_SXM,
        workload=m.ScenarioTrainingWorkload(
            kind="training",
            model=m.ScenarioWorkloadModel(params_b=7.0, layers=32, hidden=4096, heads=32),
            tokens=1e12,
            precision=m.ScenarioTrainingWorkloadPrecisionType0.BF16,
        ),
        cluster_sizes=[8, 16, 32],
        rent=m.ScenarioRent(markets=[m.ScenarioRentMarketsType0Item.ON_DEMAND]),
    )
    inference = m.ScenarioRequest(
        gpu=m.ScenarioRequestGpu.H100_SXM,
        workload=m.ScenarioInferenceWorkload(
            kind="inference",
            model=m.ScenarioWorkloadModel(name=m.ScenarioWorkloadModelNameType0.LLAMA_3_1_8B),
            traffic=m.ScenarioTraffic(peak_requests_per_s=50.0, mean_requests_per_s=20.0),
        ),
        cluster_sizes=[1, 2, 4, 8],
    )
    assert isinstance(api["advice_create"].sync(client=client, body=training), m.TrainingAdvice)
    assert isinstance(api["advice_create"].sync(client=client, body=inference), m.InferenceAdvice)

    saved = {}
    for kind, document in (("training", training), ("inference", inference)):
        body = m.ScenarioInputRequest(name=f"{kind} flow", scenario=document)
        saved[kind] = api["scenarios_create"].sync(client=client, body=body, idempotency_key=f"flow-{kind}")
        assert isinstance(saved[kind], m.ScenarioOutput)
    inference_advice = api["scenarios_advice_retrieve"].sync(saved["inference"].id, client=client)
    assert isinstance(inference_advice, m.InferenceAdvice) and inference_advice.sizes

    # Pin the recommended size's layout: the Advice's layout in the Scenario's types, then PUT with If-Match.
    advice = api["scenarios_advice_retrieve"].sync(saved["training"].id, client=client)
    assert isinstance(advice, m.TrainingAdvice)
    size = next(s for s in advice.sizes if s.gpus == advice.recommendation.gpus)
    layout = size.layout
    checkpointing = layout.activation_checkpointing
    training.workload.parallelism = m.ScenarioParallelism(
        strategy=m.ScenarioParallelismStrategyType0(layout.strategy.value),
        tp=layout.tp,
        pp=layout.pp,
        cp=layout.cp,
        micro_batch=layout.micro_batch,
        activation_checkpointing=checkpointing
        if checkpointing is None or isinstance(checkpointing, bool)
        else m.ScenarioParallelismActivationCheckpointingType1(checkpointing.value),
    )
    training.cluster_sizes = [size.gpus]
    current = api["scenarios_retrieve"].sync_detailed(saved["training"].id, client=client)
    body = m.ScenarioInputRequest(name="training flow, pinned", scenario=training)
    put = api["scenarios_update"].sync_detailed(
        saved["training"].id, client=client, body=body, if_match=current.headers["ETag"]
    )
    assert isinstance(put.parsed, m.ScenarioOutput) and put.parsed.version == current.parsed.version + 1
    stale = api["scenarios_update"].sync_detailed(
        saved["training"].id, client=client, body=body, if_match=current.headers["ETag"]
    )
    assert stale.status_code == 412 and isinstance(stale.parsed, m.Problem)
    pinned = api["scenarios_advice_retrieve"].sync(saved["training"].id, client=client)
    assert [s.layout.to_dict() for s in pinned.sizes] == [layout.to_dict()]
    assert isinstance(put.parsed.scenario.workload.model, m.ScenarioWorkloadModel)
    assert put.parsed.scenario.workload.model.layers == 32

    proposal = api["scenarios_proposals_create"].sync(saved["training"].id, client=client, idempotency_key="flow-p")
    assert isinstance(proposal, m.Proposal) and isinstance(proposal.advice, m.TrainingAdvice)
    pdf = api["proposals_proposal_pdf_retrieve"].sync(proposal.id, client=client)
    assert pdf.payload.read().startswith(b"%PDF")
    # The workbook and the CSV lists have operations of their own, answered in their own media types (through
    # ?format= they were parsed as JSON: UnicodeDecodeError, JSONDecodeError).
    workbook = api["proposals_proposal_xlsx_retrieve"].sync(proposal.id, client=client)
    assert workbook.payload.read().startswith(b"PK")  # the zip container of an xlsx
    assert api["gpus_csv_list"].sync(client=client).startswith("id,")
    assert api["offers_csv_list"].sync(client=client, page_size=5).count("\n") == 6

    offers = api["offers_list"].sync(client=client, gpu=m.V1OffersListGpu.H100_SXM, page_size=5)
    assert isinstance(offers, m.PaginatedOfferList) and offers.results
    # An unchanged list is a 304 with no body: documented, so the client returns it (its `default` branch parsed the
    # empty body as a problem and raised).
    listed = api["offers_list"].sync_detailed(client=client, gpu=m.V1OffersListGpu.H100_SXM, page_size=5)
    unchanged = api["offers_list"].sync_detailed(
        client=client, gpu=m.V1OffersListGpu.H100_SXM, page_size=5, if_none_match=listed.headers["ETag"]
    )
    assert unchanged.status_code == 304 and unchanged.parsed is None
    history = api["offers_history_list"].sync(offers.results[0].id, client=client)
    assert isinstance(history, m.PaginatedPriceObservationList) and history.count >= 1
    assert history.results[0].usd_per_gpu_hour > 0

    fleet = m.FleetPlanInputRequest(
        gpu=m.FleetPlanInputRequestGpu.H100_SXM,
        jobs=[
            m.FleetJob(name="serving", gpus=32, hours=8760.0),
            m.FleetJob(name="fine-tunes", gpus=8, hours=36.0, runs_per_year=50, max_wait_days=3.0),
            m.FleetJob(name="pretraining", gpus=64, runs_per_year=2, workload=training.workload),
        ],
    )
    stored = api["fleets_create"].sync(client=client, body=m.FleetInputRequest(name="2027", fleet=fleet))
    assert isinstance(stored, m.FleetOutput)
    plan = api["fleets_plan_retrieve"].sync(stored.id, client=client)
    assert isinstance(plan, m.FleetPlan) and len(plan.jobs) == 3
    assert isinstance(api["fleet_plans_create"].sync(client=client, body=fleet), m.FleetPlan)
    # The plan's normalized input posts back as the generated model writes it and plans the same: the pretraining
    # job's workload no longer carries the Scenario default runs_per_year 4 beside the job's 2 (that was a 400).
    echoed = m.FleetPlanInputRequest.from_dict(plan.fleet.to_dict())
    again = api["fleet_plans_create"].sync(client=client, body=echoed)
    assert isinstance(again, m.FleetPlan) and again.fleet.to_dict() == plan.fleet.to_dict()
    assert [job.runs_per_year for job in again.jobs] == [1, 50, 2]
