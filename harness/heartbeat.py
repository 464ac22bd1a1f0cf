"""A batida da posse (heartbeat): o prazo é renovado em segundo plano durante as chamadas longas.

O loop durável renova a posse a cada turno. Uma chamada ao modelo ou uma ferramenta mais
longa que o prazo, sem mais nada, deixaria a posse vencer no meio do turno, e outro worker
tomaria a execução enquanto este ainda trabalha nela. A batida é uma thread que, a cada
terço do prazo, renova a posse com o mesmo fencing token (por uma conexão própria, num
banco); se a renovação descobre que o token ficou velho, ela anota a perda, e
``check_before_effect`` faz o worker parar antes do próximo efeito de alto impacto.

A batida não substitui a cerca: um processo congelado (SIGSTOP) congela com todas as suas
threads, a posse vence, outro worker assume, e quando o congelado acorda a cerca recusa o
que ele tentar gravar. A batida só garante que um worker vivo e ocupado não perde a posse.
"""
from __future__ import annotations

import threading

from harness.lifecycle import LeaseLost


class LeaseHeartbeat:
    """Renova ``lease`` de ``store`` a cada ``seconds / 3`` até ``stop()``. Use com ``with``."""

    def __init__(self, store, lease, seconds):
        self.store = store
        self.seconds = seconds
        self.interval = seconds / 3
        self._lease = lease
        self._lost = None
        self._guard = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"posse-{lease.token}", daemon=True)

    @property
    def lease(self):
        """A posse com o prazo mais recente que a batida gravou."""
        with self._guard:
            return self._lease

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        """Para a batida e espera a última renovação terminar (depois disto, ninguém mais renova)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def check(self):
        """LeaseLost se a batida descobriu que a posse agora é de outro."""
        if self._lost is not None:
            raise LeaseLost(f"{self._lost} (descoberto pela renovação em segundo plano)")

    def _beat(self):
        keeper = self.store.lease_keeper()
        try:
            while not self._stopping.wait(self.interval):
                try:
                    renewed = keeper.renew_now(self.lease, self.seconds)
                except LeaseLost as error:
                    self._lost = error
                    return
                except Exception:  # noqa: BLE001 -- um tropeço passageiro (banco fora do ar, trava ocupada)
                    continue       # a próxima batida tenta de novo; a cerca continua valendo
                with self._guard:
                    if renewed.token == self._lease.token and renewed.expires_at > self._lease.expires_at:
                        self._lease = renewed
        finally:
            keeper.close()
