"""The live notebook: reading, editing and running the open notebook's cells through its page.

Needs the codingcode-jupyter extension (``frontend/``, shipped prebuilt in the package) in
JupyterLab 4 or Notebook 7. Elsewhere (VS Code, Colab, terminal IPython, nbconvert) the tools
say so in one line and read_notebook / insert_cell work as before.
"""
