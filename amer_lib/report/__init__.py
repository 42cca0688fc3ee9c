"""Figures in the paper's style, tables written as CSV, Markdown and LaTeX, and the statistics
behind their marks (`significance`)."""
