"""Code tasks: run a program against hidden tests in the sandbox, scan it for reward hacks.

Nothing is imported here: guest.py, candidate.py and wire.py load in the sandbox's warm workers
(stdlib only), and server.py is compiled there and sent to each candidate's fresh interpreter.
Use validators.code.validate.validate_code and validators.code.humaneval.
"""
