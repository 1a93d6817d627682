//! Tests of the MCP ⇄ weft mappings.
