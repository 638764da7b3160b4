"""The trial hub's configuration, read without starting it (the course loop itself is tests/hub, `make test-hub`).

hub/jupyterhub_config.py listens on 127.0.0.1 only and has no default password; its proxy is locked by npm;
hub/z2jh/values.yaml, the Kubernetes form, replaces the chart's open authenticator and names the same service.
"""

import json
import os
import re
import stat
import subprocess
import sys
import types
from pathlib import Path
from unittest import mock

import pytest
import yaml
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "hub"
PASSWORDS = {"MHA_HUB_INSTRUCTOR_PASSWORD": "i" * 40, "MHA_HUB_STUDENT_PASSWORD": "s" * 12}


def load_config(monkeypatch, tmp_path, **env):
    # The configuration subclasses JupyterHub's spawner: where the `hub` extra is not installed (make test-unit),
    # these tests are skipped, and `make test-hub` runs them with it.
    pytest.importorskip("jupyterhub")
    monkeypatch.setenv("MHA_HUB_DIR", str(tmp_path))
    for name in PASSWORDS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return PyFileConfigLoader("jupyterhub_config.py", path=str(HUB)).load_config()


def host(url: str) -> str:
    return re.match(r"https?://([^:/]+)", url).group(1)


def keys(tree) -> list[str]:
    """Every key of a YAML tree, at every depth."""
    if isinstance(tree, dict):
        return [*tree, *(key for value in tree.values() for key in keys(value))]
    if isinstance(tree, list):
        return [key for item in tree for key in keys(item)]
    return []


@pytest.mark.parametrize("missing", list(PASSWORDS))
def test_the_hub_does_not_start_without_its_passwords(monkeypatch, tmp_path, missing):
    given = {name: value for name, value in PASSWORDS.items() if name != missing}
    with pytest.raises(SystemExit, match=missing):
        load_config(monkeypatch, tmp_path, **given)


def test_the_hub_listens_on_loopback_only_and_lets_in_its_users_only(monkeypatch, tmp_path):
    c = load_config(monkeypatch, tmp_path, **PASSWORDS)
    addresses = [host(c.JupyterHub.bind_url), c.JupyterHub.hub_ip, host(c.ConfigurableHTTPProxy.api_url),
                 *(host(service["url"]) for service in c.JupyterHub.services)]
    assert set(addresses) == {"127.0.0.1"}
    assert c.JupyterHub.authenticator_class == "shared-password"
    assert c.SharedPasswordAuthenticator.admin_password == PASSWORDS["MHA_HUB_INSTRUCTOR_PASSWORD"]
    assert c.SharedPasswordAuthenticator.user_password == PASSWORDS["MHA_HUB_STUDENT_PASSWORD"]
    assert c.Authenticator.admin_users == {"instructor"}
    assert c.Authenticator.allowed_users == {"instructor", "student1", "student2", "student3"}
    assert "allow_all" not in c.Authenticator
    assert Path(c.SimpleLocalProcessSpawner.home_dir_template).is_relative_to(tmp_path)  # homes in the state folder


def test_the_proxy_is_locked_by_npm():
    wanted = json.loads((HUB / "package.json").read_text())["dependencies"]
    assert list(wanted) == ["configurable-http-proxy"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", wanted["configurable-http-proxy"]), "pin an exact version"
    lock = json.loads((HUB / "package-lock.json").read_text())
    assert lock["lockfileVersion"] >= 3
    packages = {path: package for path, package in lock["packages"].items() if path}
    assert packages["node_modules/configurable-http-proxy"]["version"] == wanted["configurable-http-proxy"]
    assert all(package.get("integrity", "").startswith("sha512-") for package in packages.values())


def test_the_kubernetes_values_close_the_chart_s_open_sign_in_and_keep_the_service(monkeypatch, tmp_path):
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    hub = values["hub"]
    assert hub["config"]["JupyterHub"]["authenticator_class"] not in ("dummy", "shared-password", "null")
    assert hub["config"]["Authenticator"]["allowed_users"]
    secrets = [key for key in keys(values) if re.search(r"password|client_secret|api_token", key, re.I)]
    assert not secrets, "secrets belong in the lecturer's own my-secrets.yaml, never in the repository"
    local = load_config(monkeypatch, tmp_path, **PASSWORDS)
    (service,) = local.JupyterHub.services
    assert list(hub["services"]) == [service["name"]]
    assert {role["scopes"][0] for role in hub["loadRoles"].values()} == {
        role["scopes"][0] for role in local.JupyterHub.load_roles}


def test_make_hub_and_its_test_are_wired():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("hub", "test-hub"):
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), f"make {target} is missing"
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index("make test-browser") < script.index("make test-hub")


def gigabytes(size: str) -> float:
    """The chart's sizes: '2G' (10^9 bytes) or '2Gi' (2^30 bytes), in GB."""
    number, unit = re.fullmatch(r"([\d.]+)(G|Gi|M|Mi)", size).groups()
    return float(number) * {"G": 1, "Gi": 2**30 / 1e9, "M": 1e-3, "Mi": 2**20 / 1e9}[unit]


def test_the_kubernetes_values_hold_the_measured_sizes():
    """Per-user memory fits the largest chapter's kernel with the server (hub/sizing.json), the culler is on."""
    sizing = json.loads((HUB / "sizing.json").read_text())
    assert sizing["made_by"] == "python hub/measure_sizing.py" and len(sizing["chapters"]) == 12
    peak_gb = (max(row["kernel_peak_mib"] for row in sizing["chapters"]) + sizing["lab_server_idle_mib"]) * 2**20 / 1e9
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    memory = values["singleuser"]["memory"]
    assert peak_gb <= gigabytes(memory["guarantee"]) <= gigabytes(memory["limit"])
    assert gigabytes(memory["limit"]) >= 2 * peak_gb - sizing["lab_server_idle_mib"] * 2**20 / 1e9  # two notebooks
    cpu = values["singleuser"]["cpu"]
    assert 0 < cpu["guarantee"] <= cpu["limit"]
    assert values["singleuser"]["extraEnv"]["OMP_NUM_THREADS"] == str(cpu["limit"])
    assert values["cull"]["enabled"] and values["cull"]["timeout"] <= 3600
    text = (HUB / "z2jh" / "values.yaml").read_text() + (ROOT / "docs" / "teaching.md").read_text()
    low, high = (f(row["kernel_peak_mib"] for row in sizing["chapters"]) for f in (min, max))
    assert f"{low} to {high} MiB" in text.replace("\n  ", " ").replace("\n# ", " ")


# --- Zero to JupyterHub: the chart's schema, per-user UIDs, private submissions (docs/running-a-course.md, 8) ------

CHART = HUB / "z2jh" / "chart-4.4.0"


def helm_merge(defaults, values):
    """Helm's merge of a values file over the chart's defaults: maps key by key, null removes, the rest replaces."""
    merged = dict(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def chart_errors(values: dict) -> list[str]:
    import jsonschema

    schema = json.loads((CHART / "values.schema.json").read_text())
    merged = helm_merge(yaml.safe_load((CHART / "values.yaml").read_text()), values)
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{error.json_path}: {error.message}" for error in validator.iter_errors(merged)]


def test_the_kubernetes_values_meet_the_chart_s_schema():
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    assert chart_errors(values) == []
    assert "--version 4.4.0" in (HUB / "z2jh" / "values.yaml").read_text()  # the chart whose schema this is
    # a misspelt key, and a wrong type, are what the schema is for
    assert any("'extraContainer' was unexpected" in e for e in chart_errors(helm_merge(values, {"hub": {
        "extraContainer": []}})))
    assert chart_errors(helm_merge(values, {"singleuser": {"defaultUrl": 3}}))


def z2jh_extra_config(uids: dict) -> Config:
    """Run the values' hub.extraConfig as the chart's hub would, with custom.mhaUids = uids."""
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    z2jh = types.ModuleType("z2jh")  # the chart's helper module in the hub's image
    z2jh.get_config = lambda key, default=None: uids if key == "custom.mhaUids" else default
    c = Config()
    with mock.patch.dict(sys.modules, {"z2jh": z2jh}):
        for code in values["hub"]["extraConfig"].values():
            exec(compile(code, "hub.extraConfig", "exec"), {"c": c})  # noqa: S102 - the values' own code
    return c


def test_each_kubernetes_user_runs_with_a_uid_of_their_own():
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    uids = values["custom"]["mhaUids"]
    assert set(uids) == set(values["hub"]["config"]["Authenticator"]["allowed_users"])  # everyone who signs in
    c = z2jh_extra_config(uids)

    def spawner(name):
        return types.SimpleNamespace(user=types.SimpleNamespace(name=name))

    given = {name: c.KubeSpawner.uid(spawner(name)) for name in uids}
    assert given == uids and len(set(given.values())) == len(given) and min(given.values()) > 1000
    assert c.KubeSpawner.fs_gid == 100
    with pytest.raises(ValueError, match="no UID for 'mallory'"):
        c.KubeSpawner.uid(spawner("mallory"))
    with pytest.raises(ValueError, match="two users share a UID"):
        z2jh_extra_config({"student1": 20001, "student2": 20001})
    with pytest.raises(ValueError, match="expected UIDs above 1000"):
        z2jh_extra_config({"student1": 1000})


def class_source(text: str, name: str) -> str:
    import ast

    (node,) = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == name]
    return ast.unparse(node)


def test_kubernetes_students_submit_as_the_trial_hub_s_do():
    """The students' nbgrader on Kubernetes closes submissions with the trial hub's PrivateSubmit, the same code,
    and the formgrader that collects them runs as root."""
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    kube = values["singleuser"]["extraFiles"]["nbgrader-config"]["stringData"]
    local = (HUB / "jupyter" / "student" / "nbgrader_config.py").read_text()
    assert class_source(kube, "PrivateSubmit") == class_source(local, "PrivateSubmit")
    assert "c.ExchangeFactory.submit = PrivateSubmit" in kube
    (formgrader,) = values["hub"]["extraContainers"]
    assert formgrader["securityContext"] == {"runAsUser": 0} and "--allow-root" in formgrader["command"]


@pytest.mark.slow  # five nbgrader commands: about 20 s on a quiet machine
def test_a_submission_is_closed_to_everyone_but_its_owner(tmp_path, monkeypatch):
    """nbgrader's release, fetch and submit with the trial hub's student configuration: inbound is nbgrader's 733
    (write, no listing), the submission's folder 700 and its files 600, where nbgrader alone leaves 777 and 644."""
    import nbformat

    course, exchange, home = tmp_path / "course", tmp_path / "exchange", tmp_path / "home"
    (course / "source" / "a1").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("answer = 1")])
    nbformat.write(nb, course / "source" / "a1" / "a1.ipynb")
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\nc.CourseDirectory.course_id = 'mha-notebooks'\n"
        f"c.Exchange.root = {str(exchange)!r}\n")
    home.mkdir()

    def nbgrader(cwd, *args, **env):
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # nbgrader runs alembic from PATH
        result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, capture_output=True, text=True,
                                env={**os.environ, "PATH": path, **env})
        assert result.returncode == 0, f"nbgrader {args}:\n{result.stdout}\n{result.stderr}"

    nbgrader(course, "generate_assignment", "a1")
    nbgrader(course, "release_assignment", "a1")
    student = {"JUPYTER_CONFIG_PATH": str(HUB / "jupyter" / "student"), "MHA_HUB_EXCHANGE": str(exchange),
               "JUPYTERHUB_USER": "student1"}
    nbgrader(home, "fetch_assignment", "a1", **student)
    nbgrader(home, "submit", "a1", **student)
    inbound = exchange / "mha-notebooks" / "inbound"
    assert stat.S_IMODE(inbound.stat().st_mode) & 0o777 == 0o733  # (and nbgrader's setgid bit)
    (submission,) = inbound.iterdir()
    assert submission.name.startswith("student1+a1+")
    assert stat.S_IMODE(submission.stat().st_mode) == 0o700
    files = [path for path in submission.rglob("*") if path.is_file()]
    assert {path.name for path in files} >= {"a1.ipynb", "timestamp.txt"}
    assert {stat.S_IMODE(path.stat().st_mode) for path in files} == {0o600}


def test_the_kubernetes_manifests_meet_kubernetes_schema():
    """hub/z2jh/volumes.yaml, and the formgrader container as a pod, against Kubernetes' own schemas
    (kubernetes-validate, from PyPI: pip install kubernetes-validate; not in the lock, so skipped without it)."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    version = "1.32"  # the chart's lowest (kubeVersion: >=1.32.0-0)
    documents = list(yaml.safe_load_all((HUB / "z2jh" / "volumes.yaml").read_text()))
    values = yaml.safe_load((HUB / "z2jh" / "values.yaml").read_text())
    documents.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "formgrader"},
                      "spec": {"containers": values["hub"]["extraContainers"],
                               "volumes": values["hub"]["extraVolumes"]}})
    assert [d["kind"] for d in documents] == ["PersistentVolumeClaim", "PersistentVolumeClaim", "ConfigMap", "Pod"]
    for document in documents:
        kubernetes_validate.validate(document, version, strict=True)
    broken = {**documents[0], "spec": {**documents[0]["spec"], "accessMode": ["ReadWriteMany"]}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)
