//! weft-models: model clients for weft (Anthropic, OpenAI, compatible servers, scripted) and the model planner.
