"""The site-side SDK: tokens, offline verification, edge middleware. Standard library only.

Sites install Anteroom for this alone; nothing here may import the rest of the project or any
package outside the standard library (an import-linter contract checks it).
"""
