"""A small A2A agent served by the official A2A SDK's own server classes.

Run by crates/weft/tests/a2a_client.rs with one argument, the bearer token
its card demands (scheme `bearer`, HTTP bearer); every JSON-RPC request
without it is answered 401. It prints its base URL on stdout, then one line
`bearer ok: <method>` per request that carried the token.

Two skills, chosen by the message:
- `answer` (any message): works, streaming the status "thinking" and the
  artifact "The answer" then " is 42." (appended), and completes;
- `greet` (a message starting with "greet"): asks "What is your name?"
  (input-required), and completes with "Hello, <answer>!" once answered.
"""

import asyncio
import json
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)


class Executor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([Part(text=f"Hello, {text}!")], name="greeting")
            await updater.complete()
        elif text.lower().startswith("greet"):
            question = updater.new_agent_message([Part(text="What is your name?")])
            await updater.requires_input(question)
        else:
            thinking = updater.new_agent_message([Part(text="thinking")])
            await updater.start_work(thinking)
            await updater.add_artifact([Part(text="The answer")], artifact_id="answer")
            await asyncio.sleep(0.05)
            await updater.add_artifact(
                [Part(text=" is 42.")], artifact_id="answer", append=True, last_chunk=True
            )
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def card(base: str) -> AgentCard:
    return AgentCard(
        name="sdk-agent",
        description="An agent served by the A2A SDK.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="answer", name="answer", description="Answers.", tags=["answer"]),
            AgentSkill(id="greet", name="greet", description="Asks a name, greets.", tags=["ask"]),
        ],
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
    )


class Bearer(BaseHTTPMiddleware):
    def __init__(self, app, token: str):
        super().__init__(app)
        self.token = token

    async def dispatch(self, request, call_next):
        if request.method != "POST":
            return await call_next(request)
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse({"error": "a bearer token is required"}, status_code=401)
        body = await request.body()
        try:
            method = json.loads(body).get("method")
        except ValueError:
            method = None
        print(f"bearer ok: {method}", flush=True)
        return await call_next(request)


def main() -> None:
    token = sys.argv[1]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the URL is printed: connections wait for the server.
    sock.listen(128)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    agent_card = card(base)
    handler = DefaultRequestHandler(
        agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    routes = create_agent_card_routes(agent_card) + create_jsonrpc_routes(handler, "/")
    app = Starlette(routes=routes)
    app.add_middleware(Bearer, token=token)
    print(base, flush=True)
    config = uvicorn.Config(app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
