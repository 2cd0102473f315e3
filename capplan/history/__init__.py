"""Plan history: what each plan run decided (``plan_runs``, ``plan_months``), and how it compared with what happened."""
