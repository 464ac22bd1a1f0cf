"""Level 1's answer key: each operation of the notebook, its label and why, in the words a student reads."""
from __future__ import annotations


IDEMPOTENT = "idempotente"


NOT_IDEMPOTENT = "não idempotente"


LABELS = (IDEMPOTENT, NOT_IDEMPOTENT)


# Level 1: the operations listed in the exercise notebook, the right label, and why.
OPERATIONS = {
    "enviar_email_sem_chave": (
        NOT_IDEMPOTENT,
        "`send_email` sem chave acrescenta um e-mail à caixa de saída a cada chamada: duas chamadas, "
        "dois e-mails. O valor devolvido é igual nas duas vezes, mas o efeito não.",
    ),
    "enviar_email_mesma_chave": (
        IDEMPOTENT,
        "Com a mesma `idempotency_key`, o sistema externo reconhece a repetição e não envia de novo: "
        "o mundo fica com um e-mail só. A resposta muda (\"já tinha sido enviado\"), o efeito não.",
    ),
    "ler_arquivo": (
        IDEMPOTENT,
        "`read_file` não muda nada no mundo: ler uma ou dez vezes deixa o mesmo estado.",
    ),
    "acrescentar_linha_log": (
        NOT_IDEMPOTENT,
        "Acrescentar uma linha a um log é acréscimo: cada chamada deixa uma linha a mais.",
    ),
    "gravar_status_fixo": (
        IDEMPOTENT,
        "Gravar `status = \"concluído\"` por cima do arquivo é sobrescrita com valor fixo: uma ou "
        "dez vezes, o arquivo termina igual.",
    ),
    "somar_contador": (
        NOT_IDEMPOTENT,
        "Ler o contador, somar 1 e regravar o arquivo inteiro parece sobrescrita, mas o valor "
        "gravado depende do anterior: cada repetição soma mais um. É acréscimo disfarçado.",
    ),
    "apagar_arquivo_se_existir": (
        IDEMPOTENT,
        "Depois da primeira chamada o arquivo não existe; a segunda devolve \"não encontrado\", mas "
        "o mundo é o mesmo: sem o arquivo. Julgue pelo efeito, não pela resposta.",
    ),
    "ensure_ticket_mesmo_titulo": (
        IDEMPOTENT,
        "`ensure_ticket` procura pelo título e só cria o que falta: duas chamadas deixam um chamado.",
    ),
    "create_ticket_mesmo_titulo": (
        NOT_IDEMPOTENT,
        "`create_ticket` sem chave abre um chamado novo a cada chamada, mesmo com o mesmo título "
        "(regravar tickets.json inteiro não muda isso: o efeito é um chamado a mais).",
    ),
}
