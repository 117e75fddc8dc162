"""The SSH runner against an OpenSSH server this test starts on 127.0.0.1 (tests/platforms/sshd.py).

Asserted: a harness run on the "board" (the program and inputs copied to a fresh remote work
folder, run there, outputs brought back, the folder removed) gives the local run's outputs;
the whole execute step for lenet5 through a platform declared in deploy.yaml gives the same
outputs as the host run, and compare judges it pass obtained `target:<platform>`; every failure
is a coded error: refused (nothing listening, a host key that does not match, an unknown key),
unreachable, remote failure, a missing key file, a time limit.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tests.codegen import cghelpers as H
from tests.projects import with_deployments

from pipeline.compare.numeric import same_bits
from pipeline.diagnostics import PipelineError
from pipeline.execute.harness import read_outputs, run_harness
from pipeline.nnef.tensorfile import read_tensor, write_tensor
from pipeline.ledger.checks import Verdict, Where
from pipeline.toolchain.platforms import SshTarget, host_architecture, host_platform
from pipeline.toolchain.ssh import SshSession

def _target(server, **changes) -> SshTarget:
    fields = {"host": "127.0.0.1", "user": server.user, "identity": str(server.identity),
              "known_hosts": str(server.known_hosts), "port": server.port, "workdir": str(server.workdir),
              "connect_timeout_s": 5, "timeout_s": 60, **changes}
    return SshTarget(**fields)


@pytest.fixture(scope="module")
def built(conv_code, tmp_path_factory):
    root, code = conv_code
    bins = tmp_path_factory.mktemp("sshbuild")
    plain = H.build(code, 4, str(bins / "nnef_run"))
    traced = H.build(code, 4, str(bins / "nnef_trace"), trace=True, defines=["NNEF_TRACE_INFERENCES=40"])
    inputs = bins / "inputs"
    x = np.random.default_rng(6).standard_normal((6, 1, 2, 6, 6)).astype(np.float32)
    x[0, 0, 0, 0, :2] = [np.nan, np.inf]
    write_tensor(inputs / "x.dat", x)
    return root, plain, traced, inputs


def test_a_run_on_the_board_gives_the_local_outputs(ssh_server, built, tmp_path):
    root, plain, traced, inputs = built
    run_harness(plain, inputs, tmp_path / "local", 6)
    with SshSession(_target(ssh_server), tmp_path / "transfer") as board:
        remote = board.remote
        assert remote.startswith(str(ssh_server.workdir) + "/nnef-run.")
        run_harness(plain, inputs, tmp_path / "remote", 6, session=board)
        result = run_harness(traced, inputs, tmp_path / "traced", 6, session=board, trace=tmp_path / "t.json",
                             noise_seed=3, time_runs=10, timing=tmp_path / "timing.json", warmup=2)
        assert result.command[0] == "ssh" and result.command[2].startswith(remote)
    assert not list(ssh_server.workdir.iterdir())                 # the work folder was removed
    local, far = read_outputs(tmp_path / "local", ["y"])["y"], read_outputs(tmp_path / "remote", ["y"])["y"]
    assert same_bits(far, local).all() and np.isnan(far).any()
    assert same_bits(read_outputs(tmp_path / "traced", ["y"])["y"], local).all()
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["items"]["CPU0"] and len(json.loads((tmp_path / "timing.json").read_text())["ns"]) == 10


def test_a_failing_program_is_the_harness_error_and_the_folder_is_still_removed(ssh_server, built, tmp_path):
    root, plain, _, inputs = built
    write_tensor(tmp_path / "bad" / "x.dat", np.zeros((2, 1, 2, 5, 6), np.float32))     # not the input's shape
    with pytest.raises(PipelineError) as error:
        with SshSession(_target(ssh_server), tmp_path / "t") as board:
            run_harness(plain, tmp_path / "bad", tmp_path / "o", 2, session=board)
    assert error.value.code == "RUN-E021" and "RUN-E011" in error.value.message
    assert not list(ssh_server.workdir.iterdir())


@pytest.mark.parametrize("change, code, said", [
    ({"port": None}, "RUN-E061", "refused"),                       # nothing listens there
    ({"known_hosts": "other"}, "RUN-E061", "host key"),            # the board's key is not the one on record
    ({"identity": "wrong"}, "RUN-E061", "refused"),                # a key the board does not accept
    ({"identity": "/nonexistent/key"}, "RUN-E063", "key"),
    ({"workdir": "/proc/nnef-cannot-make-this"}, "RUN-E062", "work folder"),
])
def test_failures_are_coded(ssh_server, tmp_path, change, code, said):
    from tests.platforms.sshd import _keygen, free_port

    values = dict(change)
    if values.get("port", 1) is None:
        values["port"] = free_port()
    if values.get("known_hosts") == "other":
        values["known_hosts"] = str(ssh_server.other_known_hosts)
    if values.get("identity") == "wrong":
        _keygen(tmp_path / "stranger")
        values["identity"] = str(tmp_path / "stranger")
    with pytest.raises(PipelineError) as error:
        with SshSession(_target(ssh_server, **values), tmp_path / "t"):
            pass
    assert error.value.code == code, error.value.message
    assert said in error.value.message


def test_unreachable_board(tmp_path, ssh_server):
    with pytest.raises(PipelineError) as error:       # RFC 6761: a name under .invalid never resolves
        with SshSession(_target(ssh_server, host="nnef-board.invalid", connect_timeout_s=2), tmp_path / "t"):
            pass
    assert error.value.code == "RUN-E060", error.value.message


def test_a_run_past_its_limit_is_stopped(ssh_server, built, tmp_path):
    root, plain, _, inputs = built
    sleeper = tmp_path / "sleeper"
    sleeper.write_text("#!/bin/sh\nsleep 30\n")
    sleeper.chmod(0o755)
    with SshSession(_target(ssh_server), tmp_path / "t") as board:
        with pytest.raises(PipelineError) as error:
            board.run([board.program(sleeper)], timeout=1)
    assert error.value.code == "RUN-E022"


def test_the_execute_step_through_ssh_matches_the_local_run(ssh_server, exported_project, tmp_path):
    """lenet5 on a platform declared in deploy.yaml whose runner is this server: split, codegen, execute
    and compare; its outputs equal the host run's (NaN = NaN), compare says pass obtained target:loopback."""
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step
    from pipeline.split.step import run_split_step

    lanes = host_platform().lanes
    root = with_deployments(
        exported_project, tmp_path / "p", "lenet5",
        "  single:\n    items: [{name: CPU0, target: cpu}]\n    default_item: CPU0\n    sync: event\n"
        "  board:\n    platform: loopback\n    items: [{name: CPU0, target: cpu}, {name: CPU1, target: cpu}]\n"
        "    default_item: CPU0\n    allocation: {CPU1: [flatten, fc1, relu3, fc2, relu4, fc3, prob]}\n"
        "    sync: event\n",
        f"platforms:\n  loopback:\n    architecture: {host_architecture()}\n    compiler: gcc\n"
        f"    lanes: {lanes}\n    vectors: 30\n    met_runs: 40\n    runner:\n      kind: ssh\n"
        f"      host: 127.0.0.1\n      port: {ssh_server.port}\n      user: {ssh_server.user}\n"
        f"      identity: {ssh_server.identity}\n      known_hosts: {ssh_server.known_hosts}\n"
        f"      workdir: {ssh_server.workdir}\n")
    run_split_step("lenet5", root, vectors=1)
    codegen = {(r.subject, r.check_id): r for r in run_codegen_step("lenet5", root)}
    platform_check = codegen[("lenet5/board", "codegen.platform")]
    assert platform_check.verdict is Verdict.PASS, platform_check.reason
    assert platform_check.obtained.where is Where.TARGET and platform_check.obtained.detail == "loopback"
    documents = run_execute_step("lenet5", root, runs=40)
    board, single = documents["board"], documents["single"]
    assert board["status"] == "ran" and board["vectors"] == 30, board
    assert board["platform"]["obtained"] == {"where": "target", "detail": "loopback"}
    assert not list(ssh_server.workdir.iterdir())
    for name, path in board["outputs"].items():
        far, here = read_tensor(root / path), read_tensor(root / single["outputs"][name])[:30]
        assert same_bits(far, here).all()
    results = {(r.subject, r.check_id): r for r in run_compare_step("lenet5", root)}
    for check in ("compare.platform_reference", "compare.platform_traces"):
        r = results[("lenet5/board", check)]
        assert r.verdict is Verdict.PASS, f"{check}: {r.reason}"
        assert r.obtained.label() == "target:loopback"
    assert results[("lenet5/board", "met.budget")].verdict is Verdict.NOT_RUN     # not a timing platform
    path = results[("lenet5/board", "met.platform_path")]
    if shutil.which("valgrind"):
        assert path.verdict is Verdict.PASS, path.reason                         # same architecture: counted here


@pytest.mark.parametrize("member", ["link", "../escape", "/absolute"])
def test_results_holding_a_link_or_a_path_out_are_refused(tmp_path, member):
    import io
    import tarfile

    from pipeline.toolchain.ssh import _plain_members

    bundle = tmp_path / "results.tar"
    with tarfile.open(bundle, "w") as tar:
        info = tarfile.TarInfo("out1/y.dat" if member == "link" else member)
        if member == "link":
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
        else:
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
    with tarfile.open(bundle) as tar, pytest.raises(ValueError):
        _plain_members(tar)
