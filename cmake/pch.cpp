// Anchor translation unit for the shared precompiled header of the CAF includes.
