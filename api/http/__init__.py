"""The HTTP API: FastAPI routes over `api.service`, served by uvicorn."""
