"""capplan: forecasting and GPU cost planning for LLM serving (docs/architecture.md)."""

from capplan.validation import pandas_only

pandas_only()  # before any schema is built: pandera would import Dask for types capplan never validates
