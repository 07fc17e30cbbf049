"""get_graph(), the drawing renderers and the JSON schemas, checked against LangGraph."""
