"""The HTTP server: routes paths to handlers."""

from http.server import BaseHTTPRequestHandler, HTTPServer

from app import handlers
from app.config import HOST, PORT

ROUTES = {"/health": handlers.health, "/teapot": handlers.teapot}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        route = ROUTES.get(self.path)
        status, body = route() if route else handlers.not_found(self.path)
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body.encode())


def serve() -> None:
    HTTPServer((HOST, PORT), Handler).serve_forever()
