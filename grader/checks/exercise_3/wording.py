"""The rule for the text of a high-impact call's tool_result after a crash: it says the outcome
is unknown, asks the model to confirm before repeating, and neither says the call failed nor
invites a repeat without that confirmation.

The text is what the model reads next. "Falhou, tente novamente" is an order to send the
e-mail again; "não sei se saiu, confira antes de repetir" is not. Words are compared without
accents and in lower case (``plain_text``), clause by clause, so a hedge in one sentence does
not excuse a plain claim in the next.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from grader.checks.framework import plain_text, show

# Words that tell the model the outcome is unknown.
UNCERTAINTY_WORDS = ("desconhecid", "incert", "indeterminad", "nao sei", "nao se sabe", "nao sabemos",
                     "nao da para saber", "sem saber", "como saber", "possivel saber", "impossivel saber",
                     "talvez", "pode ter", "pode nao ter", "e possivel que", "duvid", "ou nao",
                     "nao confirmad", "sem confirmacao", "possivel confirmar", "unknown", "uncertain")

# Verbs that ask the model to find out what happened before acting again.
CONFIRMATION = re.compile(r"\b(confir\w*|verifi\w*|confer\w*|chec\w*|consult\w*|certifi\w*|"
                          r"procur\w*|investig\w*|check\w*|verify\w*)")

# A plain claim that the call did not take effect.
FAILURE_CLAIM = re.compile(
    r"\b(falhou|falharam|fracassou|deu erro|sem sucesso|"
    r"(?:erro|falha) (?:ao|no|na|durante o|durante a) \w+|"
    r"nao (?:foi|foram) (?:enviad|executad|criad|realizad|concluid|feit|entregue|processad)\w*|"
    r"nao (?:saiu|rodou|executou|enviou|funcionou|aconteceu|deu certo|chegou)|failed)\b")

# A failure whose subject is the crash or the record, not the call: that part is true.
RECORD_SUBJECTS = re.compile(r"\b(processo|registro|gravacao|checkpoint|harness|agente|maquina|worker|kernel)\b"
                             r"(?:\s+\S+){0,2}\s*$")

# What an "erro ao ..." / "falha no ..." may be about and still be true: the crash or the record.
RECORD_WORDS = ("registrar", "gravar", "salvar", "anotar", "registro", "gravacao", "checkpoint", "processo",
                "harness", "agente", "kernel", "worker", "maquina")

# Words before a claim, in its clause, that turn it into a question ("não sei se falhou").
HEDGES = re.compile(r"\b(se|caso|talvez|pode|podem|possivel|nao sei|nao se sabe|desconhecid\w*|incert\w*|"
                    r"duvid\w*|whether|if)\b")

# An invitation to do it again.
RETRY = re.compile(r"\b(tente (?:novamente|de novo|outra vez|mais uma vez)|tentar (?:novamente|de novo)|"
                   r"repita|repetir|repete|reenvie|reenviar|reexecute|reexecutar|refaca|refazer|"
                   r"(?:envie|mande|execute|rode|chame|crie|faca|enviar|mandar|executar|rodar|chamar|criar|fazer) "
                   r"(?:[\w-]+ ){0,3}?(?:novamente|de novo|outra vez|mais uma vez)|"
                   r"try again|retry)\b")

# Words right before a repeat that make it no invitation ("não repita", "antes de repetir").
NEGATED = re.compile(r"\b(nao|nunca|jamais|evite|sem|antes de|em vez de|never|don't|do not|before)\s+(?:\S+\s+){0,2}$")

CLAUSE_END = re.compile(r"[.;:!?\n]+")


@dataclass(frozen=True)
class WordingProblem:
    kind: str   # "failure" | "retry" | "unknown" | "confirm"
    excerpt: str  # the words that break the rule, as written (plain text)


def clauses(text: str) -> list[str]:
    return [part.strip() for part in CLAUSE_END.split(plain_text(text)) if part.strip()]


def failure_claim(clause: str) -> str | None:
    """The first words of ``clause`` that say the call failed, unless hedged or about the record."""
    for match in FAILURE_CLAIM.finditer(clause):
        before = clause[:match.start()]
        after = clause[match.end():]
        if HEDGES.search(before) or after.lstrip(" ,").startswith(("ou nao", "ou deu certo", "ou se", "ou foi")):
            continue
        if match.group(0) in ("falhou", "falharam", "deu erro", "failed") and RECORD_SUBJECTS.search(before):
            continue
        if match.group(0).startswith(("erro ", "falha ")) and match.group(0).rsplit(" ", 1)[-1] in RECORD_WORDS:
            continue
        return match.group(0)
    return None


def unconfirmed_retry(clause: str) -> str | None:
    """The first invitation to repeat in ``clause`` that no confirmation conditions."""
    if CONFIRMATION.search(clause):
        return None
    for match in RETRY.finditer(clause):
        if not NEGATED.search(clause[:match.start()]):
            return match.group(0)
    return None


def wording_problem(text: str) -> WordingProblem | None:
    """What the unknown-outcome text gets wrong (the most harmful first), or None when it is right."""
    parts = clauses(text)
    for part in parts:
        claim = failure_claim(part)
        if claim:
            return WordingProblem("failure", claim)
    for part in parts:
        retry = unconfirmed_retry(part)
        if retry:
            return WordingProblem("retry", retry)
    plain = plain_text(text)
    if not any(word in plain for word in UNCERTAINTY_WORDS):
        return WordingProblem("unknown", "")
    if not CONFIRMATION.search(plain):
        return WordingProblem("confirm", "")
    return None


def unknown_outcome_message(problem: WordingProblem, call: str, text: str) -> str:
    """The student's message for ``problem`` in the tool_result of ``call`` ("toolu_01B (send_email)")."""
    shown = show(text, 80)
    if problem.kind == "failure":
        return (f"O texto do tool_result de {call} diz que a chamada falhou (\"{problem.excerpt}\"), mas ninguém sabe "
                "disso: o processo morreu antes de registrar o resultado, e ela pode ter agido. Lido como falha, o "
                "modelo repete a ação (é o segundo e-mail do incidente). Diga que o desfecho é desconhecido e peça "
                "que ele confira antes de repetir.")
    if problem.kind == "retry":
        return (f"O texto do tool_result de {call} convida o modelo a repetir (\"{problem.excerpt}\") sem mandar "
                "conferir antes: se a ação já tinha agido, a repetição duplica o efeito. Peça que ele confira se o "
                "efeito já existe antes de repetir (por exemplo, \"confira antes de repetir\").")
    if problem.kind == "unknown":
        return (f"O texto do tool_result de {call} não diz que o desfecho é desconhecido: {shown} deixa o modelo "
                "achar que a ação simplesmente falhou, e ele a repetiria. Diga que não se sabe se ela agiu (por "
                "exemplo, \"desfecho desconhecido: pode ter agido ou não\") e que ele confira antes de repetir.")
    return (f"O texto do tool_result de {call} diz que o desfecho é desconhecido, mas não pede que o modelo confira "
            f"antes de repetir: {shown} deixa a próxima decisão no escuro, e o caminho mais curto para ele é tentar de "
            "novo. Acrescente algo como \"confira se o efeito já existe antes de repetir\".")
