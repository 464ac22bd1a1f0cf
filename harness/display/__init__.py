"""O que as lições usam para mostrar: tabelas, linhas do tempo, widgets e quedas de verdade.

Nada aqui é preciso para uma execução durável; quem leva o harness para produção deixa
esta pasta de fora. Os módulos daqui importam o núcleo (``harness.*``) e os
armazenamentos, nunca o contrário:

- ``show`` e ``effects_view``: mensagens, cena, caixa de saída e livro-razão como tabelas
  (HTML no Jupyter, texto no terminal);
- ``widgets``: o visualizador da linha do tempo (lição 5) e o explorador de quedas (lição 6);
- ``demos``: processos filhos que as lições 1 e 2 derrubam no meio;
- ``crash_lab``: a matriz de quedas por SIGKILL e os passos do explorador (lição 6);
- ``scratch_folder``: a pasta temporária de uma lição ou exercício, apagada quando o kernel
  encerra.
"""
