"""symtrace reads installed versions and its adapters' entry points from the distributions'
metadata directories itself (symtrace.model.runtime_info): the same answers importlib.metadata
gives, at a fraction of its start-up cost."""

from __future__ import annotations

from importlib import metadata

from symtrace.model import runtime_info


def test_versions_are_importlib_metadatas():
    recorded = runtime_info.versions()
    for name in runtime_info.TRACKED_PACKAGES:
        try:
            expected = metadata.version(name)
        except metadata.PackageNotFoundError:
            expected = None
        assert recorded.get(name) == expected, name
    assert set(recorded) - set(runtime_info.TRACKED_PACKAGES) == {"python"}


def test_entry_points_are_importlib_metadatas():
    for group in ("symtrace.adapters", "console_scripts", "pytest11"):
        expected = sorted({(ep.name, ep.value) for ep in metadata.entry_points(group=group)})
        assert sorted(set(runtime_info.entry_points(group))) == expected, group
    assert runtime_info.entry_points("symtrace.adapters")  # the adapters this checkout ships


def test_the_first_distribution_on_the_path_wins(tmp_path, monkeypatch):
    for root, version in ((tmp_path / "a", "1.0"), (tmp_path / "b", "2.0")):
        info = root / "Some_Pkg-x.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: some-pkg\n"
                                       f"Version: {version}\n\nVersion: not a header\n")
        (info / "entry_points.txt").write_text(
            f"# a comment\n[other]\nx = nope:x\n\n[grp]\n  e{version} = mod:f{version}  \n")
    egg = tmp_path / "a" / "old_pkg-0.1-py3.11.egg-info"
    egg.write_text("Metadata-Version: 1.1\nName: old-pkg\nVersion: 0.1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    monkeypatch.syspath_prepend(str(tmp_path / "missing"))
    installed = runtime_info.distributions()
    assert installed["some_pkg"] == str(tmp_path / "a" / "Some_Pkg-x.dist-info")
    assert runtime_info._metadata_field(installed["some_pkg"], "Version") == "1.0"
    assert runtime_info._metadata_field(installed["old_pkg"], "Version") == "0.1"
    assert ("e1.0", "mod:f1.0") in runtime_info.entry_points("grp")
    assert ("e2.0", "mod:f2.0") not in runtime_info.entry_points("grp")
    assert metadata.version("some-pkg") == "1.0" and metadata.version("old-pkg") == "0.1"
