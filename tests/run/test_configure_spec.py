"""configure.py and the spec: --cluster empty or naming no spec, a bad spec, a spec's likely
slip (a warning at its place in the spec, a usage error where warnings are errors), and a
reports root where this run's directory cannot be made: usage errors before anything runs."""

from __future__ import annotations

import pytest

from tests.run.test_runs import SPEC, lines, run, run_dirs


def test_an_empty_spec_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """`--cluster=$SPEC` with SPEC unset: not a run of whatever tests lie about."""
    pytester.makepyfile("def test_of_mine():\n    pass\n")
    for value in ("", " "):
        result = pytester.runpytest(f"--cluster={value}", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert result.stderr.lines[0] == (
            "ERROR: --cluster=: expected the path of a contract spec (YAML), got an empty "
            "value (an unset variable?); leave the option out to run without a cluster")
        assert "test_of_mine" not in result.stdout.str()  # nothing ran


def test_a_reports_root_that_cannot_be_written_is_a_usage_error(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "blocked").write_text("a file, not a folder", encoding="utf-8")
    result = run(pytester, "--cluster-reports=blocked/reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --cluster-reports=blocked/reports: cannot create "
                                 "this run's directory there: Not a directory"])


@pytest.mark.slow
def test_a_likely_slip_in_the_spec_is_a_warning_naming_the_clause(
        pytester: pytest.Pytester) -> None:
    spec = SPEC.format(faults="").replace("  count: 2\n", "  count: 2\n  model: H100-SXM-80GB\n"
                                          '  memory: ">= 80 GiB"\n')
    (pytester.path / "trial.yaml").write_text(spec, encoding="utf-8")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    slip = ("trial.yaml:5: gpus.memory: '>= 80 GiB' is more than the H100-SXM-80GB's total "
            "memory (79.65 GiB as NVML reports it): every GPU would fail it; did you mean "
            "'>= 80 GB'?")
    where, text = slip.split(" ", 1)
    # pytest's summary shows it at its place in the spec, quoting the spec's line
    result.stdout.fnmatch_lines(["trial.yaml:5", f"  {where} SpecWarning: {text}",
                                 '    memory: ">= 80 GiB"', f"spec warning: {slip}"])
    assert "configure.py" not in result.stdout.str()
    run_dir, = run_dirs(pytester)
    assert lines(run_dir)[0]["spec_warnings"] == [slip]
    # where warnings are errors (-W error, a project's filterwarnings), a usage error
    for way in (["-W", "error"], ["-W", "error::UserWarning"]):
        # a process of its own: in this one pytest_cluster is imported already, which
        # pytest warns of (it cannot rewrite its asserts), an error too under -W error
        errored = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p",
                                                "no:cacheprovider", *way)
        assert errored.ret == pytest.ExitCode.USAGE_ERROR
        assert errored.stderr.lines == [
            f"ERROR: {slip} (a spec warning, an error under this run's warning filters)", ""]
        assert len(run_dirs(pytester)) == 1  # before any run directory


@pytest.mark.parametrize(("text", "message"), [
    ("", "ERROR: trial.yaml: the spec is empty; it needs at least a cluster section with name "
         "and nodes"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - path: /data\n    write: 10 gigs\n",
     "ERROR: trial.yaml:4: storage[/data].write: expected a rate like '10 GB/s', got '10 gigs' "
     "(unknown unit 'gigs'; known units: MB/s, GB/s, TB/s, MiB/s, GiB/s (bytes); Mb/s, Gb/s, "
     "Gbps, Tb/s (bits))"),
])
def test_bad_spec_is_a_usage_error(pytester: pytest.Pytester, text: str, message: str) -> None:
    pytester.makefile(".yaml", trial=text)
    result = pytester.runpytest("--cluster=trial.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not (pytester.path / "reports").exists()


def test_missing_spec_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--cluster=nope.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: nope.yaml: no such file"])
