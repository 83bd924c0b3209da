"""Training of the learned dice reader (:mod:`vision.learned`).

Needs the ``train`` extra (``pip install -e .[train]``: torch, onnx). Nothing here is
imported by the product at run time; the product only loads ``vision/models/*.onnx``.
See ``vision/models/MODEL_CARD.md`` for the data recipe and the training command.
"""
