"""The rule for each final status, in the words a student reads when ``status`` is wrong."""
from __future__ import annotations


STATUS_RULES = {
    "completed": "end_turn e stop_sequence encerram com status \"completed\"",
    "refused": "uma resposta com stop_reason \"refusal\" encerra com status \"refused\"",
    "failed": "uma resposta cortada (stop_reason \"max_tokens\" ou \"model_context_window_exceeded\") encerra "
              "com status \"failed\"",
    "running": "quando quem para é o teto max_turns, a execução não terminou: o status continua \"running\"",
    "budget": "quando quem para é o orçamento (tokens_used alcançou token_budget), a execução não terminou: "
              "o status continua \"running\", como no teto max_turns",
}
