"""The episode viewer: server-rendered pages over the warehouse (`eval-pipeline serve`), knowing nothing of Dagster."""
