"""The HTTP API (FastAPI). ``create_app`` builds it; ``advisor serve`` runs it with uvicorn."""
