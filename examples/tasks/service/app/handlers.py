"""Request handlers: each returns (status, body)."""


def health() -> tuple[int, str]:
    return 200, "ok"


def create(name: str) -> tuple[int, str]:
    if not name:
        return 400, "a name is required"
    return 201, f"created {name}"


def not_found(path: str) -> tuple[int, str]:
    return 404, f"no route for {path}"


def teapot() -> tuple[int, str]:
    return 418, "I'm a teapot"
