"""O harness do curso: um agente durável construído passo a passo nas lições.

Três camadas, e as setas só descem (``docs/arquitetura.md``):

- o núcleo, nesta pasta: o que uma execução durável de produção importa;
- ``stores/``: onde a execução grava (arquivos, SQLite ou PostgreSQL), atrás do contrato
  ``stores/base.py``; depende do núcleo;
- ``display/``: o que as lições usam para mostrar (tabelas, linhas do tempo, widgets) e
  para derrubar processos de verdade; depende do núcleo e dos armazenamentos, e nada do
  núcleo o importa.

Cada módulo do núcleo guarda uma ideia, na ordem em que as lições a ensinam:

- ``fake_endpoint`` e ``model``: o modelo offline (o cliente real do SDK sobre uma
  fila de respostas) e o modo ao vivo; ``endpoint_sse``, ``endpoint_thinking`` e
  ``endpoint_cache``: o streaming, a assinatura dos blocos de raciocínio e o cache de
  prompt desse endpoint;
- ``tools``: as ferramentas e o "mundo externo" que elas alteram;
- ``loop`` (lição 1): o loop do agente em memória;
- ``checkpoint`` e ``checkpointed_loop`` (lição 2): gravar a cena de execução; e
  ``crash_states``: cada estado que uma queda de energia pode deixar no meio de uma
  gravação (o modelo de ``docs/modelo-de-queda.md``, que o corretor do exercício 2 usa);
- ``resume`` (lição 3): retomar e reconciliar uma chamada órfã;
- ``effects``, ``approval`` e ``tool_runner`` (lição 4): livro-razão de efeitos,
  registro de intenção, válvula de aprovação e a ordem de cada chamada;
- ``timeline`` (lição 5): a sequência de checkpoints, rebobinar e bifurcar (e
  ``timeline_commands``: os mesmos passos pela linha de comando, em qualquer armazenamento,
  pelo contrato ``RunStore``);
- ``crash``, ``lifecycle`` e ``runner`` (lição 6): quedas sob encomenda, status da
  execução, lease com fencing token, migração v1 -> v2 e o loop durável completo;
- ``worker`` (apêndice 1): vários workers dividindo execuções num PostgreSQL;
- ``model_errors``, ``model_stream``, ``token_budget`` e ``resilient_loop`` (apêndice 2):
  tentar de novo o que vale repetir, nunca usar um stream cortado, o orçamento de tokens
  na cena e o loop com checkpoint que junta os três;
- ``scenarios``: tarefas roteirizadas que as lições e os testes compartilham;
- ``cli``: ``python -m harness``, que junta tudo isso na linha de comando, com um módulo por
  tarefa ao lado: ``cli_args`` (as opções e a conferência antes de qualquer comando),
  ``cli_run`` (o comando ``run``), ``cli_endpoint`` (o cliente do modelo e as variáveis
  ``HARNESS_ENDPOINT_*``), ``cli_text`` (o argparse em português) e ``exit_codes`` (a tabela
  que dá a cada erro um código de saída e uma linha, em todos os comandos).
"""
