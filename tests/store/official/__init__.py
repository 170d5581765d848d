"""LangGraph's official store tests, their bodies run against ``SQLAlchemyStore``.

Each module names the file of ``langchain-ai/langgraph`` it comes from and the commit;
the tests are LangChain, Inc.'s under the MIT license (``LICENSE`` beside this file).
Only their fixtures are ours (:mod:`.support`, ``conftest.py``); docs/store.md lists the
bodies marked ``xfail`` and why.
"""
