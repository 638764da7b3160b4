"""The self-checking exercises: one module per chapter (``ch00`` ... ``ch13``), the grading engine in
``_engine``.

In a chapter, write your answer in the exercise cell, then run the checker cell below it, e.g.
``from mha_chapters.exercises.ch03 import check_transpose_qkv`` and ``check_transpose_qkv(my_transpose_qkv)``.
It prints one line, ✅ or ❌ with a hint that names the likely mistake, and never a traceback.
"""
