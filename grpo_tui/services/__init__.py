"""The app's services: everything the screens and the CLI do that is not drawing, by domain, with no Textual.

Layered (an import-linter contract, lowest last): ``serving`` and ``trl_export`` over ``stream``, over
``lifecycle``, over ``catalog``, over ``slurm``, over ``machine``, over ``records`` (a GPU is a record). Services sit under the
executors: an executor uses them, no service imports an executor. ``trl_export.py`` stays at the top: a run
written back as a ``trl grpo`` recipe is one module of a domain of its own.
"""
