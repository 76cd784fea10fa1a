"""Which files one mpijob_sync task reads (module_utils/kube/mpijob_sync_task.py: source_files, read_documents)."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils.kube.mpijob_sync_task import read_documents, source_files


def test_source_files_reads_directories_globs_and_files_and_names_what_matches_nothing(tmp_path) -> None:
    (tmp_path / "jobs/sub").mkdir(parents=True)
    (tmp_path / "jobs/.git").mkdir()
    for name in (
        "jobs/b.yaml",
        "jobs/a.yml",
        "jobs/notes.txt",
        "jobs/.hidden.yaml",
        "jobs/sub/c.yaml",
        "jobs/.git/d.yaml",
        "one.json",
    ):
        (tmp_path / name).write_text("{}")
    d = str(tmp_path)
    assert source_files([f"{d}/jobs"], recursive=False) == ([f"{d}/jobs/a.yml", f"{d}/jobs/b.yaml"], [])
    assert source_files([f"{d}/jobs/", f"{d}/one.json", f"{d}/jobs/b.yaml"], recursive=True) == (
        [f"{d}/jobs/a.yml", f"{d}/jobs/b.yaml", f"{d}/jobs/sub/c.yaml", f"{d}/one.json"],
        [],
    )
    assert source_files([f"{d}/jobs/*.yaml", f"{d}/nope", f"{d}/*.toml"], recursive=False) == (
        [f"{d}/jobs/b.yaml"],
        [f"{d}/nope", f"{d}/*.toml"],
    )


def test_read_documents_returns_why_a_file_cannot_be_read(tmp_path) -> None:
    (tmp_path / "bad.yaml").write_text("a: [1,\n")
    (tmp_path / "two.yaml").write_text("a: 1\n---\nb: 2\n")
    assert read_documents(str(tmp_path / "bad.yaml")).startswith("not valid YAML: ")
    assert read_documents(str(tmp_path / "two.yaml")) == [{"a": 1}, {"b": 2}]
    assert read_documents(str(tmp_path / "missing.yaml")).startswith("cannot read: ")
