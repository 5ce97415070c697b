"""The classroom's JupyterHub pieces, and the settings of every Jupyter server the kit starts.

``authenticator`` admits the students on the roster (a right password always,
wrong ones slowed), ``spawner`` starts one container per student, with no
network and their own node credentials, ``relay`` holds the ports the proxy
reaches each student's server socket through (and the hub's API as a socket),
``sockets`` names those sockets in URLs, ``progress`` and ``progress_store``
are the instructor's live view, and ``lab_server`` holds the server settings
(kernel websockets without Nagle's delay) used by the course command, the
images and the hub alike. The hub uses the classroom (rosters, credentials)
and the course (the registry's exercise names, which the live view takes).
"""
