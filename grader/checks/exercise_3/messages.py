"""Level 1's and level 2's texts: the rule for a tool nobody classified, the multiple-choice answer and why each wrong option is wrong."""
from __future__ import annotations


UNCLASSIFIED_RULE = (
    "não está em READ_ONLY_TOOLS (nem em HIGH_IMPACT_TOOLS: ninguém a classificou). Fora do conjunto das "
    "inofensivas, ela cai no caminho cauteloso e nunca roda de novo. A ação é \"is_error\": pergunte \"está em "
    "READ_ONLY_TOOLS?\", não \"está em HIGH_IMPACT_TOOLS?\"."
)


# Level 2's multiple-choice answer. The options are written out in the exercise notebook.
ROOT_CAUSE_OPTIONS = ("A", "B", "C", "D")


ROOT_CAUSE_ANSWER = "B"


ROOT_CAUSE_FEEDBACK = {
    "A": (
        "A alternativa A culpa um checkpoint corrompido, mas o checkpoint é gravado com arquivo "
        "temporário + os.replace e estava inteiro: o pending_tool_use era verdadeiro. O segundo "
        "e-mail saiu porque alguém executou a chamada pendente de novo."
    ),
    "C": (
        "A alternativa C culpa o modelo, mas o segundo envio acontece dentro do reconcile, antes "
        "de o modelo ser chamado de novo: quem reenviou foi o harness."
    ),
    "D": (
        "A alternativa D culpa a ordem dos pontos de gravação, mas ela está certa (A depois da "
        "resposta, B depois do resultado). Entre A e B sempre existe uma janela em que o efeito já "
        "aconteceu e o registro não; o erro é o que o reconcile faz com essa incerteza."
    ),
}
