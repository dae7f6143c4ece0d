"""Episodes for tests, written the way the AIR Blackbox episode store writes them."""

from datetime import UTC, datetime

DAY = "2026-11-05"


def episode(episode_id: str, task_id: str, question: str, tool: str, tool_output: str, answer: str, *, day: str = DAY,
            category: str | None = None, agent_id: str = "triage-bot", cost: float = 0.0025, **metadata) -> dict:  # fmt: skip
    """An AIR-shaped episode as the episode store writes it: the question, one tool call and the answer."""
    start = datetime.fromisoformat(f"{day}T09:00:00").replace(tzinfo=UTC).isoformat()
    steps = [
        {"step_index": 0, "step_type": "llm_call", "model": "gpt-4o-mini", "input_summary": question,
         "output_summary": f"calling {tool}", "tokens": 300, "cost_usd": cost * 0.4, "duration_ms": 800},
        {"step_index": 1, "step_type": "tool_call", "tool_name": tool, "input_summary": question, "output_summary": tool_output,
         "duration_ms": 200},
        {"step_index": 2, "step_type": "llm_call", "model": "gpt-4o-mini", "input_summary": tool_output,
         "output_summary": answer, "tokens": 400, "cost_usd": cost * 0.6, "duration_ms": 900},
    ]  # fmt: skip
    metadata = {"task_id": task_id, **({"category": category} if category else {}), **metadata}
    return {"episode_id": episode_id, "agent_id": agent_id, "status": "success", "steps": steps, "started_at": start,
            "metadata": metadata}  # fmt: skip
