"""The plugin's edges without a framework (inner sessions drive the openai SDK against the
embedded endpoint): network block, marker validation, bundle locations, failing and
interrupted recordings, corrupt and foreign bundles, missing calls, bad options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.testing.inner import run_inner

pytest_plugins = ["pytester"]  # in the module: a non-root conftest may not

CHAT = '''
import json, socket, pytest
import openai

def ask(stub, text):
    client = openai.OpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)
    reply = client.chat.completions.create(
        model="stub-model", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content

@pytest.fixture
def stub(stub_llm_factory):
    return stub_llm_factory(script={"rules": [], "default": {"content": "hello"}})
'''


def make(pytester: pytest.Pytester, body: str, name: str = "test_core") -> None:
    pytester.makepyfile(**{name: CHAT + body})


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return run_inner(pytester, *args)


def manifest(path: Path) -> dict[str, object]:
    return json.loads((path / "manifest.json").read_text())


class TestNetworkBlock:
    BODY = '''
@pytest.mark.symtrace{marker}
def test_side_channel(stub):
    assert ask(stub, "hi") == "hello"
    server = socket.create_server(("127.0.0.1", 0))
    try:
        socket.create_connection(server.getsockname(), timeout=2).close()
    except ConnectionRefusedError:
        pass  # a program that swallows the refusal must still fail
    finally:
        server.close()
'''

    def test_replay_fails_a_test_whose_raw_connection_was_refused_and_swallowed(
        self, pytester: pytest.Pytester
    ):
        make(pytester, self.BODY.format(marker=""))
        run(pytester).assert_outcomes(passed=1)  # recording: the network is open
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([
            "*symtrace: replay blocked 1 network connection(s) the bundle does not serve: "
            "127.0.0.1:*",
            "*allow_hosts=*",
        ])

    def test_allow_hosts_lets_a_connection_through(self, pytester: pytest.Pytester):
        make(pytester, self.BODY.format(marker='(allow_hosts=["localhost"])'))
        run(pytester).assert_outcomes(passed=1)
        run(pytester).assert_outcomes(passed=1)


@pytest.mark.parametrize("stop", ["quietly", "with an error"])
def test_a_run_that_stops_early_is_sym_r103_naming_the_test_error_if_any(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stop: str
):
    make(pytester, """
import os
@pytest.mark.symtrace
def test_calls(stub):
    ask(stub, "one")
    stop = os.environ.get("STOP")
    assert stop != "with an error", "stopped early on purpose"
    if not stop:
        ask(stub, "two")
""")
    run(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("STOP", stop)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*[[]SYM-R103] the run ended with recorded calls never made at agent_action_0001*",
    ])
    named = "the test itself raised AssertionError: stopped early on purpose" in result.stdout.str()
    assert named is (stop == "with an error")


def test_a_failing_test_keeps_its_recording_and_fails_the_same_way_on_replay(
    pytester: pytest.Pytester,
):
    make(pytester, '''
@pytest.mark.symtrace
def test_wrong(stub):
    assert ask(stub, "hi") == "goodbye"
''')
    run(pytester).assert_outcomes(failed=1)
    bundle = pytester.path / "bundles" / "test_core" / "test_wrong"
    assert manifest(bundle)["outcome"]["status"] == "error"
    # described as the test it is, not as a program that exited None (issue 38)
    from symtrace.bundle import load_bundle
    from symtrace.bundle.inspect import outcome_text

    assert outcome_text(load_bundle(bundle)) == "test failed (AssertionError)"
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError*'hello' == 'goodbye'*"])
    result.stdout.fnmatch_lines(["symtrace: recorded 0 bundle(s), replayed 1*"])


def test_a_skipped_recording_leaves_nothing_behind(pytester: pytest.Pytester):
    make(pytester, '''
@pytest.mark.symtrace
def test_skips(stub):
    ask(stub, "hi")
    pytest.skip("not today")
''')
    run(pytester).assert_outcomes(skipped=1)
    assert not (pytester.path / "bundles" / "test_core" / "test_skips").exists()
    assert list((pytester.path / "bundles" / "test_core").iterdir()) == []  # no staging left


def test_a_corrupt_bundle_fails_and_is_never_re_recorded(pytester: pytest.Pytester):
    make(pytester, '''
@pytest.mark.symtrace
def test_once(stub):
    ask(stub, "hi")
''')
    bundle = pytester.path / "bundles" / "test_core" / "test_once"
    bundle.mkdir(parents=True)
    (bundle / "manifest.json").write_text("{not json")
    for mode, line in (("once", "symtrace: replay failed: BundleFormatError: *not valid JSON*"),
                       ("new", "symtrace: BundleFormatError: *not valid JSON*")):
        result = run(pytester, f"--symtrace-mode={mode}")
        assert result.ret != 0
        result.stdout.fnmatch_lines([line])
        assert "Traceback" not in result.stdout.str()
    assert (bundle / "manifest.json").read_text() == "{not json"


def test_a_foreign_directory_at_the_bundle_path_is_not_overwritten(pytester: pytest.Pytester):
    make(pytester, '''
@pytest.mark.symtrace(bundle="data")
def test_named(stub):
    ask(stub, "hi")
''')
    foreign = pytester.path / "bundles" / "test_core" / "data"
    foreign.mkdir(parents=True)
    (foreign / "keep.txt").write_text("mine")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*exists and is not a symtrace bundle; refusing to record*"])
    assert (foreign / "keep.txt").read_text() == "mine"


class TestLocations:
    BODY = '''
@pytest.mark.symtrace
@pytest.mark.parametrize("word", ["a/b", "c"])
def test_param(stub, word, symtrace_bundle):
    ask(stub, word)
    print("BUNDLE", symtrace_bundle.path)

class TestGroup:
    @pytest.mark.symtrace(bundle="shared/one")
    def test_method(self, stub):
        ask(stub, "m")
'''

    def test_default_layout_next_to_the_module(self, pytester: pytest.Pytester):
        make(pytester, self.BODY)
        run(pytester).assert_outcomes(passed=3)
        root = pytester.path / "bundles" / "test_core"
        names = sorted(p.name for p in root.iterdir())
        assert names[0] == "shared" and names[2] == "test_param[c]"
        assert names[1].startswith("test_param[a_b]-")  # "/" replaced, digest against clashes
        assert (root / "shared" / "one" / "manifest.json").is_file()
        assert manifest(root / "test_param[c]")["task"] == "test_core.py::test_param[c]"

    def test_option_and_ini_move_the_root(self, pytester: pytest.Pytester):
        make(pytester, self.BODY)
        pytester.makeini("[pytest]\nsymtrace_dir = from_ini\n")
        run(pytester).assert_outcomes(passed=3)
        assert (pytester.path / "from_ini" / "test_core" / "test_param[c]").is_dir()
        run(pytester, "--symtrace-dir", "from_cli").assert_outcomes(passed=3)
        assert (pytester.path / "from_cli" / "test_core" / "TestGroup").exists() is False
        assert (pytester.path / "from_cli" / "test_core" / "shared" / "one").is_dir()

    def test_two_tests_sharing_one_bundle_fail(self, pytester: pytest.Pytester):
        make(pytester, '''
@pytest.mark.symtrace(bundle="same")
def test_one(stub):
    ask(stub, "1")

@pytest.mark.symtrace(bundle="same")
def test_two(stub):
    ask(stub, "2")
''')
        result = run(pytester)
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(["*test_two and *test_one both use the bundle*same*"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('("name")', "*takes keywords*got 'name'*"),
        ("(mode='rewrite')", "*takes keywords*got mode*"),
        ('(adapters="ag2")', "*adapters=...) must be a list of strings*"),
        ('(bundle="../escape")', "*must not contain '..'*"),
        ('(adapters=["no_such_framework"])', "*AdapterNotFound*no_such_framework*"),
    ],
)
def test_bad_marker_arguments_are_clear_errors(
    pytester: pytest.Pytester, marker: str, message: str
):
    make(pytester, f'''
@pytest.mark.symtrace{marker}
def test_bad(stub):
    ask(stub, "hi")
''')
    result = run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines([message])
    assert not (pytester.path / "bundles" / "test_core" / "test_bad").exists()


def test_a_misspelled_mode_is_a_usage_error(pytester: pytest.Pytester):
    make(pytester, "")
    result = run(pytester, "--symtrace-mode=never")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown symtrace mode 'never' (valid: none, once, new, "
                                 "rewrite)*"])


def test_the_bundle_fixture_needs_the_marker(pytester: pytest.Pytester):
    make(pytester, '''
def test_unmarked(symtrace_bundle):
    pass
''')
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*symtrace_bundle needs a test marked @pytest.mark.symtrace*"])


def test_unmarked_tests_and_stub_fixtures_are_untouched(pytester: pytest.Pytester):
    make(pytester, '''
def test_plain(stub, stub_llm):
    assert ask(stub, "hi") == "hello"
    assert stub.served == 1
''')
    result = run(pytester, "--symtrace-mode=none")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "bundles").exists()


def test_secret_env_values_never_reach_the_bundle(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MY_PLAIN_VALUE", "hunter2-very-private")
    make(pytester, '''
import os
@pytest.mark.symtrace(secret_env=["MY_PLAIN_VALUE"])
def test_secret(stub):
    ask(stub, "my value is " + os.environ["MY_PLAIN_VALUE"])
''')
    run(pytester).assert_outcomes(passed=1)
    bundle = pytester.path / "bundles" / "test_core" / "test_secret"
    stored = b"".join(p.read_bytes() for p in bundle.rglob("*") if p.is_file())
    assert b"hunter2-very-private" not in stored and b"my value is" in stored
    run(pytester).assert_outcomes(passed=1)  # replays: the redacted request still matches


def test_an_unsupported_framework_fails_the_test_and_keeps_no_bundle(
    pytester: pytest.Pytester, tmp_path: Path
):
    site = tmp_path / "site"
    (site / "ag2").mkdir(parents=True)
    (site / "ag2" / "__init__.py").write_text("")
    (site / "ag2-2.0.0.dist-info").mkdir()
    (site / "ag2-2.0.0.dist-info" / "METADATA").write_text(  # ag2>=2 is refused
        "Metadata-Version: 2.1\nName: ag2\nVersion: 2.0.0\n")
    pytester.syspathinsert(site)
    make(pytester, '''
@pytest.mark.symtrace(adapters=[])  # an AG2 adapter would object first
def test_v1(stub):
    import ag2
''')
    make(pytester, '''
@pytest.mark.symtrace(adapters=[])
def test_swallows(stub):
    try:
        import ag2
    except Exception:
        pass  # a library that carries on without the framework
''', name="test_other")
    result = run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*symtrace: record failed: UnsupportedFrameworkError: symtrace cannot record or replay "
        "programs using ag2 2.0.0*",
    ])
    assert result.stdout.str().count("UnsupportedFrameworkError: symtrace cannot") == 2
    assert not (pytester.path / "bundles" / "test_core").exists() or not list(
        (pytester.path / "bundles" / "test_core").iterdir())
    assert not list((pytester.path / "bundles" / "test_other").iterdir())
