"""Drives `weft a2a serve` with the official A2A SDK's own client.

Run by crates/weft/tests/a2a_interop.rs with one argument, a JSON object of
the servers' base URLs:

    {"answerer": URL, "asker": URL, "stallers": {"1.0": URL, "0.3": URL}}

and, for agents served by `weft serve` behind tenant tokens, "token" (the
caller's: sent by the SDK's own auth interceptor, as the card's bearer
scheme asks) and "other_token" (another tenant's, who must not see the
caller's tasks).

`answerer` answers every task at once ("The answer is 42."), `asker` asks
"What is your name?" and then answers "greeted", a staller's model never
answers its first request (the run stays working until cancelled). Every
check runs twice: over A2A 1.0 JSON-RPC and over 0.3 JSON-RPC (the SDK's
compat transport), chosen by the interface of the card the client is given.
Prints one line per check passed; exits non-zero on the first failure.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth.credentials import CredentialService
from a2a.client.auth.interceptor import AuthInterceptor
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

ANSWER = "The answer is 42."

# The caller's bearer token, when the agents are behind tenant tokens.
TOKEN = None


class Token(CredentialService):
    """One token for the card's `bearer` scheme."""

    def __init__(self, token):
        self.token = token

    async def get_credentials(self, security_scheme_name, context):
        return self.token if security_scheme_name == "bearer" else None


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def card_of(url, token=None):
    token = token or TOKEN
    kwargs = {"headers": {"Authorization": f"Bearer {token}"}} if token else None
    async with httpx.AsyncClient() as http:
        return await A2ACardResolver(http, url).get_agent_card(http_kwargs=kwargs)


async def client_for(url, version, streaming, polling=False, token=None):
    """A client of the server at `url` speaking protocol `version`."""
    token = token or TOKEN
    card = await card_of(url, token)
    chosen = AgentCard()
    chosen.CopyFrom(card)
    del chosen.supported_interfaces[:]
    for iface in card.supported_interfaces:
        if iface.protocol_version == version:
            chosen.supported_interfaces.append(iface)
    check(len(chosen.supported_interfaces) == 1, f"the card has one {version} interface")
    config = ClientConfig(streaming=streaming, polling=polling)
    interceptors = [AuthInterceptor(Token(token))] if token else None
    client = ClientFactory(config).create(chosen, interceptors)
    transport = type(client._transport).__name__
    expected = "JsonRpcTransport" if version == "1.0" else "CompatJsonRpcTransport"
    check(transport == expected, f"{version} uses {expected}, not {transport}")
    return client


def user(text, task=None):
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    if task is not None:
        message.task_id = task.id
        message.context_id = task.context_id
    return SendMessageRequest(message=message)


def assembled(updates):
    """An artifact's text as its chunks build it (`append` adds, else replaces)."""
    text = ""
    for update in updates:
        piece = "".join(p.text for p in update.artifact.parts)
        text = text + piece if update.append else piece
    return text


async def collect(client, request):
    return [event async for event in client.send_message(request)]


def answer_text(task):
    check(len(task.artifacts) == 1, f"one artifact: {task}")
    return task.artifacts[0].parts[0].text


async def card_check(urls):
    card = await card_of(urls["answerer"])
    check(card.name == "answerer", f"the card names the agent: {card.name}")
    check(card.capabilities.streaming, "the card offers streaming")
    check(not card.capabilities.push_notifications, "the card offers no push notifications")
    check(card.skills[0].id == "answerer", "the first skill is the agent")
    check(any(s.id == "calc.add" for s in card.skills), f"a skill per tool: {card.skills}")
    versions = sorted(i.protocol_version for i in card.supported_interfaces)
    check(versions == ["0.3", "1.0"], f"both releases are offered: {versions}")
    if TOKEN:
        scheme = card.security_schemes["bearer"].http_auth_security_scheme.scheme
        check(scheme == "Bearer", f"the card declares a bearer scheme: {card.security_schemes}")
        needed = [list(r.schemes) for r in card.security_requirements]
        check(needed == [["bearer"]], f"the card requires it: {needed}")
    print("card ok")


async def send_and_get(urls, version):
    client = await client_for(urls["answerer"], version, streaming=False)
    events = await collect(client, user("What is 6 x 7?"))
    check(len(events) == 1 and events[0].HasField("task"), f"send answers a task: {events}")
    task = events[0].task
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, f"completed: {task.status}")
    check(answer_text(task) == ANSWER, f"the answer is the artifact: {task}")
    got = await client.get_task(GetTaskRequest(id=task.id))
    check(got.id == task.id and got.status.state == TaskState.TASK_STATE_COMPLETED, f"get: {got}")
    check(answer_text(got) == ANSWER, "get keeps the answer")
    said = [(m.role, m.parts[0].text) for m in got.history]
    expected = [(Role.ROLE_USER, "What is 6 x 7?"), (Role.ROLE_AGENT, ANSWER)]
    check(said == expected, f"the history is the task's conversation: {said}")
    last = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
    check([m.parts[0].text for m in last.history] == [ANSWER], f"historyLength: {last.history}")
    try:
        await client.get_task(GetTaskRequest(id="no-such-task"))
        check(False, "an unknown task is an error")
    except TaskNotFoundError:
        pass
    print(f"{version}: send, get, task not found ok")


async def stream(urls, version):
    client = await client_for(urls["answerer"], version, streaming=True)
    events = await collect(client, user("What is 6 x 7?"))
    kinds = [e.WhichOneof("payload") for e in events]
    check(kinds[0] == "task", f"a stream starts with the task: {kinds}")
    check(kinds[-1] == "status_update", f"a stream ends with a status update: {kinds}")
    last = events[-1].status_update
    check(last.status.state == TaskState.TASK_STATE_COMPLETED, f"the stream ends completed: {last}")
    artifacts = [e.artifact_update for e in events if e.HasField("artifact_update")]
    check(assembled(artifacts) == ANSWER, f"the answer streams: {events}")
    check(artifacts[-1].last_chunk and artifacts[-1].artifact.parts[0].text == ANSWER, f"the last chunk is whole: {artifacts}")
    check(kinds[-2] == "artifact_update", f"the answer comes before the end: {kinds}")
    check(last.status.timestamp.seconds > 0, f"a status has its time: {last.status}")
    check(last.task_id == events[0].task.id, "every event is of the task")
    print(f"{version}: stream ok")


async def cancel_and_subscribe(urls, version):
    url = urls["stallers"][version]
    client = await client_for(url, version, streaming=False, polling=True)
    events = await collect(client, user("Add 2 and 3."))
    task = events[0].task
    check(task.status.state == TaskState.TASK_STATE_WORKING, f"a stalled task is working: {task.status}")
    streamer = await client_for(url, version, streaming=True)
    seen = []

    async def follow():
        async for event in streamer.subscribe(SubscribeToTaskRequest(id=task.id)):
            seen.append(event)
            if len(seen) == 1:
                ready.set()

    ready = asyncio.Event()
    following = asyncio.create_task(follow())
    await asyncio.wait_for(ready.wait(), 30)
    check(seen[0].HasField("task"), f"a subscription starts with the task: {seen}")
    cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
    check(cancelled.status.state == TaskState.TASK_STATE_CANCELED, f"cancel: {cancelled.status}")
    await asyncio.wait_for(following, 30)
    last = seen[-1]
    check(last.HasField("status_update"), f"the subscription ends with a status update: {seen}")
    check(last.status_update.status.state == TaskState.TASK_STATE_CANCELED, f"canceled: {last}")
    got = await client.get_task(GetTaskRequest(id=task.id))
    check(got.status.state == TaskState.TASK_STATE_CANCELED, f"get after cancel: {got.status}")
    try:
        await client.cancel_task(CancelTaskRequest(id=task.id))
        check(False, "a canceled task cannot be canceled again")
    except TaskNotCancelableError:
        pass
    print(f"{version}: cancel, subscribe, not cancelable ok")


async def input_required(urls, version, streaming):
    client = await client_for(urls["asker"], version, streaming=streaming)
    events = await collect(client, user("Greet me."))
    task_id = events[0].task.id
    last = events[-1]
    status = last.status_update.status if streaming else last.task.status
    check(status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"input required: {events}")
    check(status.message.parts[0].text == "What is your name?", f"the question: {status.message}")
    items = status.message.parts[1].data.struct_value.fields["awaiting"].list_value.values
    check(items[0].struct_value.fields["kind"].string_value == "clarification", f"the item: {items}")
    task = await client.get_task(GetTaskRequest(id=task_id))
    check(task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"get: {task.status}")
    events = await collect(client, user("Ada", task))
    check(all(e.WhichOneof("payload") in ("task", "status_update", "artifact_update") for e in events), "events")
    final = await client.get_task(GetTaskRequest(id=task_id))
    check(final.status.state == TaskState.TASK_STATE_COMPLETED, f"answered, it completes: {final.status}")
    check(answer_text(final) == "greeted", f"the answer after the question: {final}")
    how = "streaming" if streaming else "blocking"
    print(f"{version}: input-required round trip ({how}) ok")


async def tenants(urls, other):
    """Another tenant sees none of the caller's tasks; no token, no card."""
    mine = await client_for(urls["answerer"], "1.0", streaming=False)
    task = (await collect(mine, user("What is 6 x 7?")))[0].task
    theirs = await client_for(urls["answerer"], "1.0", streaming=False, token=other)
    try:
        await theirs.get_task(GetTaskRequest(id=task.id))
        check(False, "another tenant's task is not found")
    except TaskNotFoundError:
        pass
    try:
        await theirs.cancel_task(CancelTaskRequest(id=task.id))
        check(False, "another tenant cannot cancel the task")
    except TaskNotFoundError:
        pass
    async with httpx.AsyncClient() as http:
        card = f"{urls['answerer']}/.well-known/agent-card.json"
        status = (await http.get(card)).status_code
        check(status == 401, f"the card without a token: {status}")
    print("tenants ok")


async def main():
    global TOKEN
    urls = json.loads(sys.argv[1])
    TOKEN = urls.get("token")
    await card_check(urls)
    if urls.get("other_token"):
        await tenants(urls, urls["other_token"])
    for version in ("1.0", "0.3"):
        await send_and_get(urls, version)
        await stream(urls, version)
        await cancel_and_subscribe(urls, version)
        await input_required(urls, version, streaming=False)
        await input_required(urls, version, streaming=True)
    print("all ok")


asyncio.run(main())
