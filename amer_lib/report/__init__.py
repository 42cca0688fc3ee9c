"""Figures in the paper's style and tables written as CSV, Markdown and LaTeX."""
