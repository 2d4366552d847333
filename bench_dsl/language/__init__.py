"""The .bench language: parser, syntax tree, checks, and the typed scenario model they build."""
