"""O endereço de um banco como ele pode aparecer numa mensagem: sem a senha.

Mensagens de erro, o comando sugerido ao fim de um ``submit`` e o "continue com:" de uma
retomada vão para terminais, logs e capturas de tela; a senha do banco não vai junto.
"""
from __future__ import annotations

import re


def without_password(dsn):
    """O endereço para mensagens, com toda senha trocada por ***.

    A senha pode vir em três lugares: ``usuario:senha@`` no endereço, ``?password=`` (ou
    ``&password=``, em qualquer caixa) na consulta, e ``password=...`` numa conninfo de
    palavras-chave (``host=... password='a b'``). Nenhum deles aparece numa mensagem.
    """
    text = str(dsn)
    text = re.sub(r"(://[^:/@?#]*:)[^@/?#]*@", r"\1***@", text)
    text = re.sub(r"([?&]password=)[^&#]*", r"\1***", text, flags=re.IGNORECASE)
    text = re.sub(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", r"\1***", text, flags=re.IGNORECASE)
    return text
