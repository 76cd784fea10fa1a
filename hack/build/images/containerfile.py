"""Builds an image from a Containerfile without a container engine: the one image builder of hack/build/images.
RUN steps run chrooted in the root filesystem (in a private mount namespace), COPY/ADD copy from the build
context (ADD unpacks a local tar, as podman does), and ENV/USER/WORKDIR/ENTRYPOINT/CMD/LABEL/EXPOSE go into the
image config.

One cache key scheme, like a layer cache: a chain of hashes that starts from the base image's content (the digest
of its config, which names its layers' digests; a constant for `FROM scratch`) and takes in every instruction
and the content every COPY/ADD copies. The root filesystem after each RUN is cached under its step's key (in
--cache); the image under the last step's key, `<--out-dir>/<--name>-<key[:16]>.tar`. An unchanged build is
therefore found without running anything, and a change re-runs only the steps from the first one it touches.
Tags are not part of the key: a cached image asked for under other tags is only renamed.

usage: containerfile.py --file Containerfile --context DIR --name NAME --tag NAME:TAG [--tag ...] [--key-tag]
                        --out-dir DIR [--base-tar IMAGE.tar --tag-of-base REF] [--build-arg K=V ...] [--cache DIR]
Prints "<first tag> <image tar> <key[:16]>". FROM must name the image in --base-tar (after build-arg
substitution), or `scratch`; that is the one place the build differs from `podman build`: the base comes from a
local tar, not a registry.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# A script of the system's python3 (build.sh): its siblings import from its own folder, the first on sys.path.
from archive import retag
from pack import pack

# Part of every key: change it when the builder's output changes for the same Containerfile and context.
KEY_SCHEME = "containerfile.py/2"

BUILD_CA = "/run/build-ca.crt"
UNEXPANDED = ("RUN", "CMD", "ENTRYPOINT")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
VAR = re.compile(r"\$(?:\{(\w+)(?::-([^}]*))?\}|(\w+))")


class BuildError(Exception):
    pass


@dataclass
class ImageConfig:
    env: dict[str, str] = field(default_factory=dict)
    user: str = ""
    workdir: str = "/"
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    exposed: dict[str, dict] = field(default_factory=dict)

    def runtime(self) -> dict:
        env = {"PATH": DEFAULT_PATH, **self.env}
        config: dict = {"Env": [f"{k}={v}" for k, v in env.items()], "WorkingDir": self.workdir}
        for key, value in (
            ("User", self.user),
            ("Entrypoint", self.entrypoint),
            ("Cmd", self.cmd),
            ("Labels", self.labels),
            ("ExposedPorts", self.exposed),
        ):
            if value:
                config[key] = value
        return config


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: comments dropped, continuation lines joined."""
    result, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        keyword, _, args = line.partition(" ")
        result.append((keyword.upper(), args.strip()))
    if pending:
        raise BuildError("Containerfile ends inside a continued line")
    return result


def substitute(value: str, variables: dict[str, str]) -> str:
    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        return variables.get(name) or (m.group(2) or "")

    return VAR.sub(repl, value)


def json_or_shell(args: str) -> list[str]:
    """Exec form (a JSON array) as is; shell form wrapped in /bin/sh -c."""
    if args.startswith("["):
        return json.loads(args)
    return ["/bin/sh", "-c", args]


def key_values(args: str) -> dict[str, str]:
    """ENV/LABEL/ARG arguments: `k=v k2="v 2"` or the old `k v` form."""
    parts = shlex.split(args)
    if parts and "=" not in parts[0]:
        return {parts[0]: " ".join(parts[1:])}
    return dict(p.split("=", 1) if "=" in p else (p, "") for p in parts)


def ignore_patterns(context: Path) -> list[str]:
    for name in (".containerignore", ".dockerignore"):
        path = context / name
        if path.exists():
            return [
                ln.strip().rstrip("/") for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")
            ]
    return []


def ignored(rel: str, patterns: list[str]) -> bool:
    verdict = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern[1:] if negate else pattern
        if fnmatch.fnmatch(rel, pat) or any(fnmatch.fnmatch(p, pat) for p in Path(rel).parents if str(p) != "."):
            verdict = not negate
    return verdict


def context_files(context: Path, source: str, patterns: list[str]) -> list[Path]:
    """Every path under COPY source `source` that the ignore file lets through (ignored folders are not walked)."""
    files = []
    for match in _top_matches(context, source):
        if not match.is_dir():
            files.append(match)
            continue
        for top, dirs, names in os.walk(match):
            here = Path(top)
            dirs[:] = sorted(d for d in dirs if not ignored(str((here / d).relative_to(context)), patterns))
            files.append(here)
            files.extend(here / n for n in sorted(names) if not ignored(str((here / n).relative_to(context)), patterns))
    return files


def content_hash(context: Path, files: list[Path]) -> str:
    """Paths relative to the context, modes and bytes: the same sources give the same key in any checkout."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(context)} {path.stat().st_mode:o}".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def chown_spec(root: Path, spec: str) -> tuple[int, int]:
    user, _, group = spec.partition(":")

    def lookup(name: str, db: str) -> int:
        if name.isdigit():
            return int(name)
        for line in (root / "etc" / db).read_text().splitlines():
            fields = line.split(":")
            if fields[0] == name:
                return int(fields[2])
        raise BuildError(f"--chown: no {name!r} in the image's /etc/{db}")

    uid = lookup(user, "passwd")
    return uid, lookup(group, "group") if group else uid


def copy_into(
    root: Path, context: Path, sources: list[str], dest: str, workdir: str, chown: str | None, patterns: list[str]
) -> None:
    target = root / (dest if dest.startswith("/") else os.path.join(workdir, dest)).lstrip("/")
    into_dir = dest.endswith("/") or len(sources) > 1 or target.is_dir()
    owner = chown_spec(root, chown) if chown else None
    for source in sources:
        for match in _top_matches(context, source):
            base = target / match.name if into_dir and not match.is_dir() else target
            for path in context_files(context, str(match.relative_to(context)), patterns):
                out = base / path.relative_to(match) if match.is_dir() else base
                if path.is_dir():
                    out.mkdir(parents=True, exist_ok=True)
                else:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, out, follow_symlinks=True)
                if owner:
                    os.chown(out, *owner)


def _top_matches(context: Path, source: str) -> list[Path]:
    if any(c in source for c in "*?["):
        return sorted(context.glob(source.lstrip("/")))
    path = context / source.lstrip("/")
    if not path.exists():
        raise BuildError(f"COPY source {source!r} is not in the build context {context}")
    return [path]


def run_in_root(root: Path, argv: list[str], env: dict[str, str], user: str, workdir: str) -> None:
    shutil.copy("/etc/resolv.conf", root / "etc/resolv.conf")
    (root / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
    userspec = ["--userspec", user if ":" in user else f"{user}:{user}"] if user and user not in ("0", "root") else []
    build_env = {"PATH": DEFAULT_PATH, "HOME": "/root", **env}
    # The host's CA bundle (it may trust a TLS proxy) serves this RUN only, never the image.
    host_ca = os.environ.get("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
    if os.path.isfile(host_ca):
        shutil.copy(host_ca, root / BUILD_CA.lstrip("/"))
        build_env.update({k: BUILD_CA for k in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")})
    build_env.update({k: v for k, v in os.environ.items() if k.lower() in ("http_proxy", "https_proxy", "no_proxy")})
    envs = [f"{k}={v}" for k, v in build_env.items()]
    script = 'mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" && shift && exec chroot "$@"'
    cmd = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        script,
        "run",
        str(root),
        *userspec,
        str(root),
        "/usr/bin/env",
        "-i",
        *envs,
        "/bin/sh",
        "-c",
        'cd "$0" && exec "$@"',
        workdir,
        *argv,
    ]
    print(f"[containerfile] RUN {' '.join(argv)}", file=sys.stderr, flush=True)
    # A step's output goes to stderr: stdout carries the build's result line only.
    if subprocess.run(cmd, stdout=sys.stderr).returncode:
        raise BuildError(f"RUN failed: {' '.join(argv)}")
    (root / "etc/resolv.conf").write_text("")
    (root / BUILD_CA.lstrip("/")).unlink(missing_ok=True)


def unpack_image_tar(image_tar: Path, root: Path) -> None:
    with tarfile.open(image_tar) as image:
        manifest = json.load(image.extractfile("manifest.json"))[0]
        for layer in manifest["Layers"]:
            with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
                image.extract(layer, tmp)
                subprocess.run(
                    ["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-xpf", os.path.join(tmp, layer)],
                    check=True,
                )


def snapshot(root: Path, path: Path) -> None:
    subprocess.run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", f"{path}.partial", "."], check=True)
    os.replace(f"{path}.partial", path)


def step_keys(
    steps: list[tuple[str, str]], context: Path, patterns: list[str], build_args: dict[str, str], base: str
) -> list[str]:
    """The cache key of every step: the chain of hashes (see the docstring), computed without building anything."""
    variables: dict[str, str] = {}
    chain = hashlib.sha256(f"{KEY_SCHEME} {base}".encode()).hexdigest()
    keys: list[str] = []
    for keyword, raw in steps:
        text = raw if keyword in UNEXPANDED else substitute(raw, variables)
        if keyword == "ARG":
            for k, v in key_values(raw).items():
                variables[k] = build_args.get(k, substitute(v, variables))
        elif keyword == "ENV":
            variables.update({k: substitute(v, variables) for k, v in key_values(raw).items()})
        elif keyword == "FROM":
            text = base  # the base's content, not the name it goes by here
        elif keyword in ("COPY", "ADD"):
            text += content_hash(context, [f for s in _sources(text) for f in context_files(context, s, patterns)])
        chain = hashlib.sha256((chain + keyword + text).encode()).hexdigest()
        keys.append(chain)
    return keys


def build(args: argparse.Namespace) -> tuple[str, Path, str]:
    """Builds the image unless its key's tar is cached; returns (first tag, image tar, short key)."""
    context = Path(args.context).resolve()
    steps = instructions(Path(args.file).read_text())
    if not any(keyword == "FROM" for keyword, _ in steps):
        raise BuildError(f"{args.file}: no FROM")
    patterns = ignore_patterns(context)
    build_args = dict(a.split("=", 1) for a in args.build_arg)
    base_tar = Path(args.base_tar) if args.base_tar else None
    keys = step_keys(steps, context, patterns, build_args, _base_identity(base_tar))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{args.name}-{keys[-1][:16]}.tar"
    tags = args.tag + ([f"{args.tag[0].rsplit(':', 1)[0]}:{keys[-1][:16]}"] if args.key_tag else [])
    if out.exists():
        print(f"[containerfile] {args.name}: cached ({out.name})", file=sys.stderr)
        if _tags(out) != tags:
            retag(str(out), str(out), tags)
    else:
        cache = Path(args.cache or out_dir / "steps" / args.name)
        cache.mkdir(parents=True, exist_ok=True)
        run_steps(steps, keys, context, patterns, build_args, base_tar, args.tag_of_base, cache, out, tags)
        # Keep only this build: of the image, and of its steps.
        for old in out_dir.glob(f"{args.name}-*.tar"):
            if old != out and re.fullmatch(rf"{re.escape(args.name)}-[0-9a-f]{{16}}\.tar", old.name):
                old.unlink()
        for old in cache.glob("*.tar"):
            if old.stem not in keys:
                old.unlink()
    return args.tag[0], out, keys[-1][:16]


def run_steps(
    steps: list[tuple[str, str]],
    keys: list[str],
    context: Path,
    patterns: list[str],
    build_args: dict[str, str],
    base_tar: Path | None,
    tag_of_base: str | None,
    cache: Path,
    out: Path,
    tags: list[str],
) -> None:
    """Runs the steps after the last RUN already cached and packs the image into `out`."""
    resume = max(
        (i for i, (kw, _) in enumerate(steps) if kw == "RUN" and (cache / f"{keys[i]}.tar").exists()), default=-1
    )
    root = out.with_suffix(".rootfs")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    try:
        if resume >= 0:
            print(f"[containerfile] using cached steps 1-{resume + 1}", file=sys.stderr)
            subprocess.run(
                ["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-xpf", str(cache / f"{keys[resume]}.tar")],
                check=True,
            )
        config, variables, seen_from = ImageConfig(), {}, False
        for i, (keyword, raw) in enumerate(steps):
            replay = i > resume  # before the resume point only the config is replayed
            if keyword == "ARG":
                for k, v in key_values(raw).items():
                    variables[k] = build_args.get(k, substitute(v, variables))
                continue
            # Like podman/docker: RUN, CMD and ENTRYPOINT are left to the shell, the rest is expanded.
            text = raw if keyword in UNEXPANDED else substitute(raw, {**variables, **config.env})
            if keyword == "FROM":
                if seen_from:
                    raise BuildError("multi-stage Containerfiles are not supported here")
                seen_from = True
                if text.split()[0] == "scratch":
                    config = ImageConfig()
                    continue
                if base_tar is None or text.split()[0] != tag_of_base:
                    raise BuildError(f"FROM {text} but the base given is {tag_of_base or 'none'}")
                if replay:
                    unpack_image_tar(base_tar, root)
                config = ImageConfig(**_base_config(base_tar))
            elif keyword == "ENV":
                config.env.update({k: substitute(v, {**variables, **config.env}) for k, v in key_values(raw).items()})
            elif keyword == "LABEL":
                config.labels.update(key_values(text))
            elif keyword == "USER":
                config.user = text
            elif keyword == "WORKDIR":
                config.workdir = os.path.join(config.workdir, text)
                if replay:
                    (root / config.workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
            elif keyword == "ENTRYPOINT":
                config.entrypoint = json_or_shell(text)
            elif keyword == "CMD":
                config.cmd = json_or_shell(text)
            elif keyword == "EXPOSE":
                config.exposed.update({p if "/" in p else f"{p}/tcp": {} for p in text.split()})
            elif keyword in ("COPY", "ADD"):
                if replay:
                    flags = [w for w in text.split() if w.startswith("--")]
                    if any(not f.startswith("--chown=") for f in flags):
                        raise BuildError(f"{keyword} {' '.join(flags)}: only --chown is supported")
                    chown = flags[0].split("=", 1)[1] if flags else None
                    sources, dest = _sources(text), text.split()[-1]
                    if keyword == "ADD":
                        sources = unpack_archives(root, context, sources, dest, config.workdir)
                    copy_into(root, context, sources, dest, config.workdir, chown, patterns)
            elif keyword == "RUN":
                if replay:
                    run_in_root(root, json_or_shell(text), {**variables, **config.env}, config.user, config.workdir)
                    snapshot(root, cache / f"{keys[i]}.tar")
            elif keyword in ("HEALTHCHECK", "STOPSIGNAL", "SHELL", "VOLUME", "ONBUILD"):
                print(f"[containerfile] {keyword} ignored", file=sys.stderr)
            else:
                raise BuildError(f"unknown instruction {keyword}")
        pack(str(root), str(out), tags, config.runtime())
    finally:
        shutil.rmtree(root, ignore_errors=True)


def unpack_archives(root: Path, context: Path, sources: list[str], dest: str, workdir: str) -> list[str]:
    """ADD's one difference from COPY here: a local tar archive is unpacked into `dest`. Returns the other sources."""
    rest = []
    for source in sources:
        path = context / source.lstrip("/")
        if path.is_file() and tarfile.is_tarfile(path):
            target = root / (dest if dest.startswith("/") else os.path.join(workdir, dest)).lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["tar", "--numeric-owner", "--xattrs", "-C", str(target), "-xpf", str(path)], check=True)
        else:
            rest.append(source)
    return rest


def _base_identity(base_tar: Path | None) -> str:
    """The base image's content as the key sees it: its config's digest (the config names every layer's digest)."""
    if base_tar is None:
        return "scratch"
    with tarfile.open(base_tar) as image:
        return json.load(image.extractfile("manifest.json"))[0]["Config"]


def _tags(image_tar: Path) -> list[str]:
    with tarfile.open(image_tar) as image:
        return json.load(image.extractfile("manifest.json"))[0]["RepoTags"]


def _sources(text: str) -> list[str]:
    """The source paths of a COPY/ADD (everything but flags and the destination)."""
    words = json.loads(text) if text.startswith("[") else [w for w in text.split() if not w.startswith("--")]
    return words[:-1]


def _base_config(image_tar: Path) -> dict:
    with tarfile.open(image_tar) as image:
        manifest = json.load(image.extractfile("manifest.json"))[0]
        runtime = json.load(image.extractfile(manifest["Config"])).get("config", {})
    env = dict(e.split("=", 1) for e in runtime.get("Env", []))
    return {
        "env": env,
        "user": runtime.get("User", ""),
        "workdir": runtime.get("WorkingDir") or "/",
        "entrypoint": runtime.get("Entrypoint"),
        "cmd": runtime.get("Cmd"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", required=True)
    parser.add_argument("--context", required=True)
    parser.add_argument("--name", required=True, help="the image tar's name in --out-dir: NAME-<key>.tar")
    parser.add_argument("--tag", required=True, action="append", help="NAME:TAG the image tar names (repeatable)")
    parser.add_argument("--key-tag", action="store_true", help="also name the image <first tag's name>:<key[:16]>")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--base-tar", help="the base image (FROM), a tar in the `docker save` layout")
    parser.add_argument("--tag-of-base", help="the reference FROM must resolve to")
    parser.add_argument("--build-arg", action="append", default=[])
    parser.add_argument("--cache", help="the steps' cache (default: OUT_DIR/steps/NAME)")
    try:
        ref, out, key = build(parser.parse_args())
    except BuildError as err:
        sys.exit(f"containerfile.py: {err}")
    print(ref, out, key)


if __name__ == "__main__":
    main()
