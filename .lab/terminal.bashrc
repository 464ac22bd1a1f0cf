# Terminal do JupyterLab aberto por `python3 bootstrap.py lab`.
# O bash roda com este arquivo no lugar do ~/.bashrc e sem ser um shell de login, então o
# /etc/profile não tem como zerar o PATH: `grade` e `course` ficam sempre à mão.
[ -f /etc/bash.bashrc ] && . /etc/bash.bashrc
[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"
if [ -n "$CURSO_BIN" ]; then
    export VIRTUAL_ENV="$(dirname "$CURSO_BIN")"
    export PATH="$CURSO_BIN:$PATH"
fi
# Fora da pasta do curso (o Jupyter foi iniciado de outro lugar)? Comece na raiz dele.
if [ -n "$JUPYTER_SERVER_ROOT" ]; then
    case "$PWD/" in
        "$JUPYTER_SERVER_ROOT"/*) ;;
        *) cd "$JUPYTER_SERVER_ROOT" || true ;;
    esac
fi
# O terminal do JupyterLab (xterm.js) mostra cores: o relatório do `grade` só as usa num terminal
# com TERM de verdade, então um TERM vazio ou "dumb" herdado de quem iniciou o Jupyter vira xterm.
case "${TERM:-}" in
    ""|dumb) export TERM=xterm-256color ;;
esac
export COLORTERM="${COLORTERM:-truecolor}"
