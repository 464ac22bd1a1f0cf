"""Exercise 3's rule for the text of a high-impact call's tool_result after a crash: the outcome
is unknown, the model confirms before repeating, the call is never said to have failed and no
repeat is invited without that confirmation. Each text is one a learner could write."""
from __future__ import annotations

import pytest

from grader.checks.exercise_3.wording import unknown_outcome_message, wording_problem
from harness.resume import UNKNOWN_OUTCOME

RIGHT = [
    UNKNOWN_OUTCOME,  # the harness's own text, which lesson 3 shows
    "Desfecho desconhecido: o processo morreu antes de registrar o resultado desta chamada. "
    "Ela pode ter agido ou não; confira antes de repetir.",
    "Não sei se esta chamada rodou: o processo caiu antes do registro. Verifique antes de repetir.",
    "Resultado desconhecido: o e-mail pode ter sido enviado. Verifique antes de repetir.",
    "resultado desconhecido - pode ter sido enviado; verifique a caixa de saida antes de tentar de novo",
    "Nao sei se o e-mail foi enviado ou se falhou. Confira antes de reenviar.",
    "O processo falhou antes de registrar o resultado: não sei se o e-mail saiu. Confira a caixa de saída.",
    "Houve uma falha do processo antes do registro. Não se sabe se a ação aconteceu: não repita sem verificar.",
    "Falha ao registrar o resultado: desfecho desconhecido, confira antes de repetir.",
    "Estado incerto: a chamada pode ter falhado ou não. Só tente novamente depois de confirmar que o efeito não existe.",
    "Não é possível saber se o envio aconteceu. Não tente de novo às cegas: consulte a caixa de saída.",
    "O agente caiu no meio: talvez o e-mail tenha saído, talvez não. Verifique antes de mandar de novo.",
    "DESFECHO DESCONHECIDO (a chamada pode ou não ter agido). Confirme antes de repetir.",
    "Desfecho desconhecido, pode ter agido ou não. Não chame a ferramenta outra vez sem conferir a caixa de saída.",
]

WRONG = [
    ("erro", "unknown"),
    ("Erro ao enviar: tente novamente.", "failure"),
    ("A chamada falhou. Tente novamente.", "failure"),
    ("Resultado desconhecido: o envio falhou, tente novamente.", "failure"),  # a keyword does not excuse it
    ("O e-mail não foi enviado. Pode ter sido por causa da queda; tente de novo.", "failure"),
    ("Falha no envio: estado desconhecido, confira antes de repetir.", "failure"),
    ("A chamada falhou (resultado desconhecido); verifique antes de repetir.", "failure"),
    ("O e-mail nao saiu. Desfecho incerto, confira.", "failure"),
    ("O envio falhou, não sei se chegou. Confira.", "failure"),  # the hedge comes after the claim
    ("Erro: a ferramenta pode ter agido. Tente novamente.", "retry"),
    ("Desfecho desconhecido. Tente novamente.", "retry"),
    ("Estado incerto. Reenvie o e-mail.", "retry"),
    ("Talvez o e-mail não tenha saído; envie de novo para garantir.", "retry"),
    ("O e-mail pode ter saído ou não. Chame a ferramenta outra vez.", "retry"),  # words between the verb and the repeat
    ("Não sei se saiu; chame a send_email de novo.", "retry"),
    ("Desfecho desconhecido, pode ter agido. O melhor é chamar a ferramenta mais uma vez.", "retry"),
    ("Desfecho desconhecido: o processo caiu antes de registrar.", "confirm"),
    ("Estado de execução desconhecido.", "confirm"),
]


@pytest.mark.parametrize("text", RIGHT)
def test_a_right_text_passes(text):
    assert wording_problem(text) is None


@pytest.mark.parametrize("text, kind", WRONG)
def test_a_wrong_text_is_refused_for_what_it_gets_wrong(text, kind):
    problem = wording_problem(text)
    assert problem is not None and problem.kind == kind, problem


@pytest.mark.parametrize("text, words", [
    ("A chamada falhou. Tente novamente.", ["diz que a chamada falhou", "\"falhou\""]),
    ("Desfecho desconhecido. Tente novamente.", ["convida o modelo a repetir", "\"tente novamente\""]),
    ("O e-mail pode ter saído ou não. Chame a ferramenta outra vez.",
     ["convida o modelo a repetir", "\"chame a ferramenta outra vez\""]),
    ("erro", ["não diz que o desfecho é desconhecido"]),
    ("Estado de execução desconhecido.", ["não pede que o modelo confira"]),
])
def test_each_problem_has_a_message_that_names_it(text, words):
    message = unknown_outcome_message(wording_problem(text), "toolu_01B (send_email)", text)
    assert message.startswith("O texto do tool_result de toolu_01B (send_email)")
    for word in words:
        assert word in message
