"""Does the main process get only what the gradebook reads of an executed notebook?"""

import nbformat

from autograder.pipeline.course.notebook import for_gradebook


def test_the_gradebook_gets_only_what_it_reads_of_a_notebook():
    """Graded cells keep their outputs, others lose them, and the notebook itself is left alone?"""
    shown = nbformat.v4.new_code_cell("print(1)", outputs=[{"output_type": "stream", "name":
                                      "stdout", "text": "1\n"}])  # fmt: skip
    test = nbformat.v4.new_code_cell("assert False", metadata={"nbgrader": {"grade": True}})
    test.outputs = [{"output_type": "error", "ename": "AssertionError", "evalue": "",
                     "traceback": []}]  # fmt: skip
    nb = nbformat.v4.new_notebook(cells=[shown, nbformat.v4.new_markdown_cell("x"), test])
    slim = for_gradebook(nb)
    assert slim["cells"][0]["outputs"] == [] and slim["cells"][2]["outputs"] == test.outputs
    assert slim["cells"][1] is nb.cells[1] and nb.cells[0].outputs != []
