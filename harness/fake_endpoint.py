"""O endpoint offline: o cliente real do SDK ``anthropic`` falando com uma fila de respostas.

Nada aqui imita o cliente. O código das lições chama ``client.messages.create(...)``
no ``anthropic.Anthropic`` de verdade; só o transporte HTTP é trocado por um
``httpx2.MockTransport`` que responde como a API responderia: valida a conversa
(e devolve o mesmo HTTP 400 da API quando ela está quebrada) e, se estiver tudo
certo, serve a próxima resposta roteirizada.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Iterable

import httpx2

from harness.endpoint_cache import PromptCache
from harness.endpoint_sse import streamed_response
from harness.endpoint_thinking import signed, thinking_problem
from harness.tools import EMPTY_FOLDER, NO_MATCHES

if TYPE_CHECKING:
    import anthropic

DEFAULT_MODEL = "claude-haiku-4-5"
# Chaves opcionais de uma resposta roteirizada: a resposta a servir no lugar dela conforme o
# que as ferramentas do turno anterior devolveram. Assim o modelo roteirizado conta a história
# que o resultado contou (recusado, desconhecido, erro, simulado, vazio), não a do caminho feliz.
ON_TOOL_REFUSED = "on_tool_refused"   # a válvula de aprovação recusou: a ação nunca rodou
ON_TOOL_UNKNOWN = "on_tool_unknown"   # desfecho desconhecido: o efeito pode ou não ter acontecido
ON_TOOL_ERROR = "on_tool_error"       # outro is_error (e a resposta das duas acima, se faltarem)
ON_TOOL_DRY_RUN = "on_tool_dry_run"   # dry-run: a ferramenta de alto impacto não rodou
ON_TOOL_EMPTY = "on_tool_empty"       # a leitura rodou e não achou nada
OUTCOME_KEYS = {"refused": ON_TOOL_REFUSED, "unknown": ON_TOOL_UNKNOWN, "error": ON_TOOL_ERROR,
                "dry_run": ON_TOOL_DRY_RUN, "empty": ON_TOOL_EMPTY}  # na ordem: o primeiro achado vale
FAILED_OUTCOMES = ("refused", "unknown", "error")
DRY_RUN_MARK = "[dry-run]"
# Falhas do lado do modelo, também por resposta roteirizada (veja ``scripted_failures``):
FAIL_FIRST = "fail_first"   # [{"status": 529, "retry_after": 2, "times": 3}, ...]: servidas antes da resposta
CUT_STREAM = "cut_stream"   # true: o primeiro pedido em streaming desta resposta perde a conexão no meio
FAILURE_KINDS = {429: ("rate_limit_error", "limite de pedidos atingido (roteiro do endpoint offline)"),
                 500: ("api_error", "Internal server error"),
                 529: ("overloaded_error", "Overloaded")}


# --- Validação da conversa, com os textos de erro da própria API -------------------

def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _tool_use_ids(message: dict) -> list[str]:
    return [b["id"] for b in _blocks(message) if b.get("type") == "tool_use"]


def validate_messages(messages: list[dict]) -> str | None:
    """Devolve o texto do erro 400 que a API daria para esta conversa, ou None se ela é válida.

    Regras do protocolo de ferramentas (Handle tool calls — Claude API —
    https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls):
    cada ``tool_use`` precisa de um ``tool_result`` na mensagem seguinte, cada
    ``tool_result`` precisa de um ``tool_use`` na mensagem anterior, os resultados
    vêm primeiro no conteúdo da mensagem e não se repetem.
    """
    if not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "system":
            # O texto da própria API: a instrução de sistema vai no parâmetro system, fora de messages.
            return ('messages: Unexpected role "system". The Messages API accepts a top-level `system` '
                    'parameter, not "system" as an input message role.')
        if role not in ("user", "assistant"):
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        blocks = _blocks(message)
        previous_ids = _tool_use_ids(messages[index - 1]) if index > 0 else []

        if role == "assistant":
            ids = _tool_use_ids(message)
            if not ids:
                continue
            following = messages[index + 1] if index + 1 < len(messages) else None
            answered = set()
            if following is not None and following.get("role") == "user":
                answered = {b.get("tool_use_id") for b in _blocks(following) if b.get("type") == "tool_result"}
            missing = [i for i in ids if i not in answered]
            if missing:
                return (
                    f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                    f"corresponding `tool_result` block in the next message."
                )
            continue

        # Mensagem do usuário: confira cada tool_result contra o tool_use anterior.
        seen: set[str] = set()
        result_positions = []
        for position, block in enumerate(blocks):
            if block.get("type") != "tool_result":
                continue
            result_positions.append(position)
            tool_use_id = block.get("tool_use_id")
            if tool_use_id not in previous_ids:
                return (
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {tool_use_id}. Each `tool_result` block must have a "
                    f"corresponding `tool_use` block in the previous message."
                )
            if tool_use_id in seen:
                return (
                    f"messages.{index}.content.{position}: each tool_use must have a single result. "
                    f"Found multiple `tool_result` blocks with id: {tool_use_id}"
                )
            seen.add(tool_use_id)
        if previous_ids and result_positions != list(range(len(result_positions))):
            return (
                f"messages.{index}: Did not find {len(previous_ids)} `tool_result` block(s) at the "
                f"beginning of this message. Messages following `tool_use` blocks must begin with a "
                f"matching number of `tool_result` blocks."
            )
    return None


# --- Respostas roteirizadas --------------------------------------------------------

def expand_response(compact: dict, index: int, model: str = DEFAULT_MODEL) -> dict:
    """Completa uma resposta escrita na forma curta e a valida com o modelo de dados do SDK.

    O SDK não valida respostas por padrão (``{}`` viraria uma Message cheia de None),
    então o roteiro é conferido aqui, ao ser carregado, e não no meio de uma execução.
    As alternativas (``on_tool_error``, ``on_tool_refused``...) são conferidas também, mas não
    fazem parte da resposta.
    """
    compact = dict(compact)
    compact.pop(FAIL_FIRST, None)
    compact.pop(CUT_STREAM, None)
    if isinstance(compact.get("content"), list):
        compact["content"] = signed(compact["content"])
    for key in OUTCOME_KEYS.values():
        alternative = compact.pop(key, None)
        if alternative is not None:
            expand_response(alternative, index, model)
    full = {
        "id": f"msg_roteiro_{index:03d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    full.update(copy.deepcopy(compact))
    from anthropic.types import Message  # o SDK é importado quando um roteiro é carregado, não antes

    try:
        Message.model_validate(full)
    except Exception as error:  # pydantic.ValidationError, com a lista de campos ruins
        raise ValueError(f"resposta roteirizada nº {index} é inválida: {error}") from error
    return full


def cut_at_limit(response: dict, max_tokens: int) -> dict:
    """A resposta como a API a entregaria com ``max_tokens`` menor que o que ela precisa.

    O roteiro diz quantos tokens a resposta completa gasta (``usage.output_tokens``). Se o
    pedido permite menos, a geração para no limite: ``stop_reason`` vira ``"max_tokens"``,
    os blocos que não couberam somem e o bloco do meio fica cortado. Um tool_use cortado
    fica só com as chaves da entrada que couberam, possivelmente nenhuma: é a chamada pela
    metade que um loop correto nunca executa.
    """
    needed = response["usage"]["output_tokens"]
    if response.get("stop_reason") == "max_tokens" or needed <= max_tokens:
        return response
    sizes = [len(json.dumps(block, ensure_ascii=False)) for block in response["content"]]
    budget = sum(sizes) * max_tokens // needed  # caracteres que cabem, proporcionais aos tokens
    content = []
    for block, size in zip(response["content"], sizes):
        if size <= budget:
            content.append(block)
            budget -= size
            continue
        if block["type"] == "text" and budget > 0:
            content.append({**block, "text": block["text"][:budget]})
        elif block["type"] == "tool_use":
            content.append({**block, "input": _input_that_fits(block, budget)})
        break
    usage = {**response["usage"], "output_tokens": max_tokens}
    return {**response, "content": content, "stop_reason": "max_tokens", "stop_sequence": None, "usage": usage}


def _input_that_fits(block: dict, budget: int) -> dict:
    """As chaves da entrada de um tool_use que cabem no que sobrou; nunca a entrada inteira."""
    budget -= len(json.dumps({**block, "input": {}}, ensure_ascii=False))
    kept = {}
    for key, value in block["input"].items():
        budget -= len(json.dumps({key: value}, ensure_ascii=False))
        if budget < 0:
            break
        kept[key] = value
    if kept and kept == block["input"]:
        kept.pop(next(reversed(kept)))  # o bloco não coube inteiro: algo da entrada ficou de fora
    return kept


NO_MESSAGES = object()  # um pedido sem a chave "messages" (a API o recusa; o histórico o guarda assim)


class RequestHistory(Sequence):
    """Os pedidos que o endpoint recebeu, em ordem; ``history[i]`` é o corpo do pedido i como chegou.

    Cada pedido leva a conversa inteira, e uma conversa só cresce: guardar cada corpo inteiro
    custa memória quadrática em turnos (uma execução de 1.000 turnos passava de 900 MiB).
    Cada registro guarda só o que o pedido acrescentou ao anterior: quantas mensagens ele
    repete do pedido de antes e as novas. A única conversa guardada inteira é a do último
    pedido, para comparar com o próximo. Ler um pedido o reconstrói seguindo os anteriores
    (como a tabela ``saves`` dos bancos) e devolve uma cópia: quem lê não muda o histórico.
    """

    def __init__(self):
        self._records = []          # (mensagens repetidas do pedido anterior, mensagens novas, resto do corpo)
        self._last_messages = []    # a conversa do último pedido
        self._last_rest = None      # model, max_tokens...: o mesmo objeto enquanto não mudam

    def append(self, body: dict) -> None:
        messages = body.get("messages")
        rest = {key: value for key, value in body.items() if key != "messages"}
        if rest == self._last_rest:
            rest = self._last_rest
        if not isinstance(messages, list):  # um pedido malformado é guardado como veio
            self._records.append((0, messages if "messages" in body else NO_MESSAGES, rest))
            self._last_messages, self._last_rest = [], rest
            return
        shared = 0
        for before, now in zip(self._last_messages, messages):
            if before != now:
                break
            shared += 1
        self._records.append((shared, tuple(messages[shared:]), rest))
        self._last_messages, self._last_rest = messages, rest

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[number] for number in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("não houve esse pedido")
        shared, added, rest = self._records[index]
        body = dict(rest)
        if isinstance(added, tuple):
            body["messages"] = self._messages_at(index)
        elif added is not NO_MESSAGES:
            body["messages"] = added
        return copy.deepcopy(body)

    def _messages_at(self, index: int) -> list:
        """A conversa do pedido ``index``: as mensagens repetidas vêm dos pedidos anteriores."""
        pieces, needed = [], None  # needed: quantas mensagens do pedido atual ainda faltam (None = todas)
        while True:
            shared, added, _rest = self._records[index]
            pieces.append(added if needed is None else added[:max(0, needed - shared)])
            needed = shared if needed is None else min(needed, shared)
            if needed == 0:
                break
            index -= 1
        return [message for piece in reversed(pieces) for message in piece]

    def __eq__(self, other):
        if isinstance(other, (RequestHistory, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"RequestHistory({len(self)} pedidos)"


class ScriptedEndpoint:
    """Serve as respostas de um roteiro, validando cada pedido como a API faria.

    A resposta servida é a de índice igual ao número de mensagens ``assistant`` já
    presentes na conversa. Assim um processo que retoma de um checkpoint, com um
    endpoint novo e o mesmo roteiro, continua exatamente do ponto em que o outro caiu.

    Cada ``stop_reason`` da API pode ser roteirizado como está (``end_turn``,
    ``stop_sequence``, ``tool_use``, ``pause_turn``, ``refusal``, ``max_tokens``...). Além
    disso, o endpoint respeita o ``max_tokens`` do pedido: uma resposta que precisa de mais
    tokens de saída do que o pedido permite chega cortada (veja ``cut_at_limit``), e o
    mesmo pedido com um limite maior recebe a resposta inteira.
    """

    def __init__(self, responses: Iterable[dict], model: str = DEFAULT_MODEL):
        script = list(responses)
        self.responses = [expand_response(r, i, model) for i, r in enumerate(script)]
        self.alternatives = [
            {key: expand_response(r[key], i, model) for key in OUTCOME_KEYS.values() if key in r}
            for i, r in enumerate(script)
        ]
        self.requests = RequestHistory()  # memória constante por pedido, qualquer que seja a conversa
        self.failures = [scripted_failures(r, i) for i, r in enumerate(script)]
        self.cuts = [bool(r.get(CUT_STREAM)) for r in script]
        self.failures_served: dict[int, int] = {}   # resposta -> quantas falhas dela já saíram
        self.cuts_served: set[int] = set()          # respostas cujo stream já foi cortado uma vez
        self.cache = PromptCache()                  # os prefixos gravados, enquanto o endpoint vive

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/v1/messages"):
            return _error(404, "not_found_error", f"rota desconhecida no endpoint offline: {request.url.path}")
        body = json.loads(request.content)
        self.requests.append(body)
        limit = body.get("max_tokens")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            return _error(400, "invalid_request_error", "max_tokens: Input should be a valid integer greater than or equal to 1")
        problem = validate_messages(body.get("messages", [])) or thinking_problem(
            body["messages"], self.thinking_served(body["messages"]))
        if problem:
            return _error(400, "invalid_request_error", problem)
        index = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if index >= len(self.responses):
            return _error(
                500,
                "response_queue_exhausted",
                f"fila de respostas esgotada: o roteiro tem {len(self.responses)} resposta(s) e a "
                f"conversa pediu a de número {index + 1}",
            )
        served = self.failures_served.get(index, 0)
        if served < len(self.failures[index]):
            self.failures_served[index] = served + 1
            return failure_response(self.failures[index][served])
        response = cut_at_limit(self.reply_for(index, tool_outcome(body["messages"])), limit)
        usage = self.cache.usage_for(body)
        if usage is not None:
            response = {**response, "usage": {**response["usage"], **usage}}
        if body.get("stream"):
            cut = self.cuts[index] and index not in self.cuts_served
            if cut:
                self.cuts_served.add(index)
            return streamed_response(response, cut)
        return httpx2.Response(200, json=response)

    def thinking_served(self, messages: list[dict]) -> list[list[dict]]:
        """Os blocos de raciocínio de cada resposta que a conversa traz, pela posição dela.

        Um endpoint novo (a retomada em outro processo) sabe o que mandou pelo roteiro: a
        resposta i, ou a alternativa dela cujos tool_use têm os mesmos ids da mensagem.
        """
        found = []
        assistant = [m for m in messages if m.get("role") == "assistant"]
        for index, message in enumerate(assistant[:len(self.responses)]):
            ids = _tool_use_ids(message)
            candidates = [self.responses[index], *self.alternatives[index].values()]
            chosen = next((c for c in candidates if _tool_use_ids(c) == ids), candidates[0])
            found.append([b for b in chosen["content"] if b["type"] == "thinking"])
        return found

    def reply_for(self, index: int, outcome: str | None) -> dict:
        """A resposta ``index`` do roteiro, ou a alternativa dela para o que as ferramentas contaram.

        Uma falha sem alternativa própria (recusa, desconhecido) usa a de erro; dry-run e
        vazio sem alternativa seguem o caminho normal.
        """
        alternatives = self.alternatives[index]
        if outcome is None:
            return self.responses[index]
        chosen = alternatives.get(OUTCOME_KEYS[outcome])
        if chosen is None and outcome in FAILED_OUTCOMES:
            chosen = alternatives.get(ON_TOOL_ERROR)
        return chosen or self.responses[index]

    def client(self) -> anthropic.Anthropic:
        """O cliente de verdade do SDK, ligado a este endpoint."""
        import anthropic  # já carregado com o roteiro (expand_response): aqui não custa nada

        http_client = httpx2.Client(transport=httpx2.MockTransport(self.handle))
        client = anthropic.Anthropic(api_key="offline", max_retries=0, http_client=http_client)
        client.stub_endpoint = self
        return client


def tool_outcome(messages: list[dict]) -> str | None:
    """O que as ferramentas do turno anterior contaram, lido no texto dos resultados como um
    modelo leria: "refused", "unknown", "error", "dry_run", "empty", ou None (deu certo).

    Um turno com vários resultados vale pelo mais grave (a ordem de ``OUTCOME_KEYS``).
    """
    last = messages[-1] if messages else {}
    if last.get("role") != "user":
        return None
    found = {_result_outcome(b) for b in _blocks(last) if b.get("type") == "tool_result"}
    return next((outcome for outcome in OUTCOME_KEYS if outcome in found), None)


def _result_outcome(block: dict) -> str | None:
    content = block.get("content") or ""
    text = content if isinstance(content, str) else " ".join(
        part.get("text", "") for part in content if isinstance(part, dict))
    text, lowered = text.strip(), text.lower()
    if block.get("is_error"):
        if "recusad" in lowered:
            return "refused"
        return "unknown" if "desconhecid" in lowered else "error"
    if text.startswith(DRY_RUN_MARK):
        return "dry_run"
    return "empty" if text in ("", NO_MATCHES, EMPTY_FOLDER) else None


def scripted_failures(compact: dict, index: int) -> list[dict]:
    """As falhas que a resposta ``index`` serve antes dela, uma por pedido, em ordem.

    Cada item é ``{"status": 429 | 500 | 529, "retry_after": segundos (opcional), "times": N}``.
    """
    failures = []
    for item in compact.get(FAIL_FIRST) or []:
        if item.get("status") not in FAILURE_KINDS:
            raise ValueError(f"resposta roteirizada nº {index}: fail_first só conhece os status "
                             f"{sorted(FAILURE_KINDS)}, não {item.get('status')!r}")
        failures += [{key: item[key] for key in ("status", "retry_after") if key in item}] * item.get("times", 1)
    return failures


def failure_response(failure: dict) -> httpx2.Response:
    """A resposta de erro de uma falha roteirizada, com o retry-after quando o roteiro dá um."""
    kind, message = FAILURE_KINDS[failure["status"]]
    response = _error(failure["status"], kind, message)
    if "retry_after" in failure:
        response.headers["retry-after"] = str(failure["retry_after"])
    return response


def _error(status: int, kind: str, message: str) -> httpx2.Response:
    return httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": message}})


def make_stub_client(responses: Iterable[dict]) -> anthropic.Anthropic:
    """Um ``anthropic.Anthropic`` real que responde a partir de uma fila de respostas."""
    return ScriptedEndpoint(responses).client()
