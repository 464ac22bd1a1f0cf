"""Level 3's outside world: a calendar tool server in the shape of an MCP server, whose tools
declare their own behaviour in ``annotations`` (readOnlyHint, destructiveHint, idempotentHint),
with the MCP defaults when a hint is missing (readOnlyHint false, destructiveHint true,
idempotentHint false). The exercise notebook builds one from a fixture to try ``reconcile_mcp``
(``fixture_server``); the checks build the same from the fixture and read what the student's
code asked of it (``calls``).

Source: Tools, Model Context Protocol specification (2025-06-18), ToolAnnotations:
https://modelcontextprotocol.io/specification/2025-06-18/server/tools
"""
from __future__ import annotations

import copy

TOOLS = [
    {"name": "list_events", "description": "Lista os eventos de um dia.",
     "inputSchema": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "create_event", "description": "Cria um evento novo na agenda.",
     "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}, "day": {"type": "string"},
                                                      "time": {"type": "string"}}, "required": ["title", "day", "time"]},
     "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}},
    {"name": "move_event", "description": "Põe um evento num horário (o mesmo horário de novo não muda nada).",
     "inputSchema": {"type": "object", "properties": {"event_id": {"type": "string"}, "time": {"type": "string"}},
                     "required": ["event_id", "time"]},
     "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}},
    {"name": "cancel_event", "description": "Cancela um evento (cancelar de novo não muda nada).",
     "inputSchema": {"type": "object", "properties": {"event_id": {"type": "string"}}, "required": ["event_id"]},
     "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}},
    {"name": "send_invite", "description": "Manda um convite do evento por e-mail.",
     "inputSchema": {"type": "object", "properties": {"event_id": {"type": "string"}, "email": {"type": "string"}},
                     "required": ["event_id", "email"]}},
]

# The MCP defaults of the hints a tool leaves out.
DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False}


def hints_of(name: str) -> dict | None:
    """A tool's hints with the defaults filled in; None for a tool the server does not have."""
    tool = next((tool for tool in TOOLS if tool["name"] == name), None)
    return None if tool is None else {**DEFAULTS, **tool.get("annotations", {})}


def safe_to_repeat(name: str) -> bool:
    """What level 3 expects: run again only what the server declares read-only or idempotent."""
    hints = hints_of(name)
    return bool(hints) and (hints["readOnlyHint"] is True or hints["idempotentHint"] is True)


class CalendarServer:
    """Um servidor de ferramentas de agenda, no formato de um servidor MCP.

    - ``tools()``: a lista das ferramentas, cada uma com ``name``, ``description``, ``inputSchema``
      e, quando o servidor as declara, ``annotations`` (``readOnlyHint``, ``destructiveHint``,
      ``idempotentHint``). Uma dica que falta vale o padrão do MCP: ``readOnlyHint`` false,
      ``destructiveHint`` true, ``idempotentHint`` false.
    - ``call_tool(name, arguments)``: executa a ferramenta e devolve ``{"content": texto,
      "is_error": bool}``, como ``execute_tool``.
    - ``events()`` e ``invites()``: o estado da agenda, para você conferir.
    """

    def __init__(self, events: list[dict] | tuple = (), invites: list[dict] | tuple = ()):
        self._events = [dict(event) for event in events]
        self._invites = [dict(invite) for invite in invites]
        self.calls: list[tuple[str, dict]] = []  # each call_tool, in order: what the grader reads

    def tools(self) -> list[dict]:
        return copy.deepcopy(TOOLS)

    def events(self) -> list[dict]:
        return copy.deepcopy(self._events)

    def invites(self) -> list[dict]:
        return copy.deepcopy(self._invites)

    def _event(self, event_id: str) -> dict | None:
        return next((event for event in self._events if event["id"] == event_id), None)

    def call_tool(self, name: str, arguments: dict) -> dict:
        self.calls.append((name, copy.deepcopy(arguments)))
        arguments = arguments if isinstance(arguments, dict) else {}
        if name == "list_events":
            found = [e for e in self._events if e["day"] == arguments.get("day") and e.get("status") != "cancelado"]
            text = "\n".join(f"{e['id']} {e['time']} {e['title']}" for e in found)
            return {"content": text or "(nenhum evento)", "is_error": False}
        if name == "create_event":
            event = {"id": f"E{len(self._events) + 1}", "title": arguments.get("title"), "day": arguments.get("day"),
                     "time": arguments.get("time"), "status": "confirmado"}
            self._events.append(event)
            return {"content": f"evento {event['id']} criado: {event['title']}, {event['day']} às {event['time']}",
                    "is_error": False}
        if name in ("move_event", "cancel_event", "send_invite"):
            event = self._event(arguments.get("event_id"))
            if event is None:
                return {"content": f"evento não encontrado: {arguments.get('event_id')}", "is_error": True}
            if name == "move_event":
                event["time"] = arguments.get("time")
                return {"content": f"evento {event['id']} marcado às {event['time']}", "is_error": False}
            if name == "cancel_event":
                event["status"] = "cancelado"
                return {"content": f"evento {event['id']} cancelado", "is_error": False}
            self._invites.append({"event_id": event["id"], "email": arguments.get("email")})
            return {"content": f"convite de {event['id']} enviado para {arguments.get('email')}", "is_error": False}
        return {"content": f"ferramenta desconhecida: {name}", "is_error": True}

    def __repr__(self) -> str:
        return f"CalendarServer({len(self._events)} eventos, {len(self._invites)} convites)"


def server_of(data: dict) -> CalendarServer:
    """The server a fixture describes, fresh."""
    calendar = data.get("calendar") or {}
    return CalendarServer(calendar.get("events") or [], calendar.get("invites") or [])


def fixture_server(name: str) -> CalendarServer:
    """Um servidor de agenda novo, como o da fixture ``name`` do exercise-3."""
    from grader.core.fixture_loader import read_fixture_files

    for item in read_fixture_files("exercise-3"):
        if item.name == name:
            if item.problems or item.data is None:
                raise ValueError("; ".join(item.problems))
            return server_of(item.data)
    raise KeyError(f"não existe a fixture {name!r} do exercise-3")
