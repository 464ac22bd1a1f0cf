"""O aparato do curso: um agente durável construído passo a passo nas lições.

Cada módulo guarda uma ideia, na ordem em que as lições a ensinam:

- ``fake_endpoint`` e ``model``: o modelo offline (o cliente real do SDK sobre uma
  fila de respostas) e o modo ao vivo;
- ``tools``: as ferramentas e o "mundo externo" que elas alteram;
- ``loop`` (lição 1): o loop do agente em memória;
- ``checkpoint`` e ``checkpointed_loop`` (lição 2): gravar a cena de execução;
- ``resume`` (lição 3): retomar e reconciliar uma chamada órfã;
- ``scenarios``: tarefas roteirizadas que as lições e os testes compartilham.
"""
