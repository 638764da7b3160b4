"""The trial hub's configuration, read without starting it (the course loop itself is tests/hub, `make test-hub`).

hub/jupyterhub_config.py listens on 127.0.0.1 only and has no default password; its proxy is locked by npm;
hub/z2jh/values.yaml, the Kubernetes form, replaces the chart's open authenticator and names the same service.
"""

import json
import re
from pathlib import Path

import pytest
import yaml
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
